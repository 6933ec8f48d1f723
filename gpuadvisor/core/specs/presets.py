"""The bundled model presets (``catalogs/models.csv``) as :class:`ModelSpec` objects.

Each row holds a full architecture and the published parameter count with its source; a
test checks that the count computed from the architecture is within 1% of the published one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import CatalogError, InputError
from .catalog_io import CatalogMeta, RowReader, parse_rows, read_catalog_file, read_catalog_text
from .hardware import bundled_catalog_dir
from .models import ModelSpec

MODEL_SCHEMA_VERSIONS = (1,)
MODEL_REQUIRED_COLUMNS = (
    "id",
    "name",
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "source",
)


@dataclass(frozen=True, slots=True)
class ModelCatalog:
    """Model presets by id, in file order."""

    models: dict[str, ModelSpec]
    meta: CatalogMeta

    def get(self, model_id: str, field: str = "model.preset") -> ModelSpec:
        try:
            return self.models[model_id]
        except KeyError:
            raise InputError(
                field, f"unknown model preset; known presets: {', '.join(self.models)}", model_id
            ) from None

    def __iter__(self) -> Iterator[ModelSpec]:
        return iter(self.models.values())

    def __len__(self) -> int:
        return len(self.models)


def parse_model_row(r: RowReader) -> ModelSpec:
    """One catalog row -> :class:`ModelSpec`; shape errors name the line and column."""

    def opt_int(column: str) -> int | None:
        return r.integer(column, required=False)

    frac = r.number("sliding_window_layer_fraction", required=False)
    kwargs = dict(
        id=r.text("id"),
        name=r.text("name"),
        family=r.text("family", required=False),
        kind=r.text("kind", required=False) or "decoder",
        num_layers=r.integer("num_layers"),
        hidden_size=r.integer("hidden_size"),
        num_attention_heads=r.integer("num_attention_heads"),
        num_key_value_heads=r.integer("num_key_value_heads"),
        head_dim=opt_int("head_dim"),
        intermediate_size=r.integer("intermediate_size"),
        moe_intermediate_size=opt_int("moe_intermediate_size"),
        vocab_size=r.integer("vocab_size"),
        gated_mlp=r.boolean("gated_mlp", True),
        tied_embeddings=r.boolean("tied_embeddings", False),
        num_experts=opt_int("num_experts") or 1,
        experts_per_token=opt_int("experts_per_token") or 1,
        max_context=opt_int("max_context") or 4096,
        sliding_window=opt_int("sliding_window"),
        sliding_window_layer_fraction=frac if frac is not None else 1.0,
        position_embedding=r.text("position_embedding", required=False) or "rope",
        norm=r.text("norm", required=False) or "rmsnorm",
        norms_per_layer=r.integer("norms_per_layer", required=False, minimum=0) or 2,
        attention_bias=r.boolean("attention_bias"),
        attention_out_bias=r.boolean("attention_out_bias"),
        mlp_bias=r.boolean("mlp_bias"),
        extra_params=r.integer("extra_params", required=False, minimum=0) or 0,
        kv_lora_rank=opt_int("kv_lora_rank"),
        q_lora_rank=opt_int("q_lora_rank"),
        qk_rope_head_dim=opt_int("qk_rope_head_dim"),
        qk_nope_head_dim=opt_int("qk_nope_head_dim"),
        v_head_dim=opt_int("v_head_dim"),
        dense_layers=r.integer("dense_layers", required=False, minimum=0) or 0,
        shared_experts=r.integer("shared_experts", required=False, minimum=0) or 0,
        published_params=opt_int("published_params"),
        source=r.text("source"),
        notes=r.text("notes", required=False),
    )
    try:
        return ModelSpec(**kwargs)  # type: ignore[arg-type]
    except InputError as exc:
        column = exc.field.rsplit(".", 1)[-1]
        raise CatalogError(r.where(column), exc.reason, exc.value) from None


def load_model_catalog(path: str | Path | None = None, text: str | None = None) -> ModelCatalog:
    """Load model presets from ``path`` (default: the bundled file) or ``text``."""
    if text is not None:
        meta, rows = read_catalog_text(
            text, "models.csv", "models", MODEL_SCHEMA_VERSIONS, MODEL_REQUIRED_COLUMNS
        )
    else:
        meta, rows = read_catalog_file(
            path or bundled_catalog_dir() / "models.csv",
            "models",
            MODEL_SCHEMA_VERSIONS,
            MODEL_REQUIRED_COLUMNS,
        )
    return ModelCatalog(models=parse_rows(meta, rows, parse_model_row, lambda m: m.id), meta=meta)
