"""GGUF files written by the ``gguf`` package (llama.cpp's own writer) read back from their headers."""

import json

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType, GGUFWriter, LlamaFileType

from gpuadvisor.core.errors import ModelConfigError
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.gguf_file import model_from_gguf, read_gguf
from gpuadvisor.core.formats.gguf_header import MAX_ARRAY_VALUES, MAX_KEPT_VALUES, GgufArray
from gpuadvisor.core.formats.scenario import load_scenario
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog

Q = GGMLQuantizationType
H, FF, LAYERS, VOCAB = 256, 512, 2, 1000


def _quant(rows: int, cols: int, qtype: GGMLQuantizationType) -> np.ndarray:
    """Zero bytes shaped as ``rows`` x ``cols`` weights of ``qtype`` (the writer takes the byte shape)."""
    block, size = GGML_QUANT_SIZES[qtype]
    return np.zeros((rows, cols // block * size), dtype=np.uint8)


def _write(path, split: int = 0, kv_heads=2, tokens: bool = False, extra=None):
    """A 2-layer Llama-shaped model: Q4_K attention and MLP, Q6_K output, F32 norms and embedding.
    ``kv_heads`` may be one value per layer; ``tokens`` writes the vocabulary as a token list
    instead of its size; ``extra(writer)`` adds more metadata."""
    w = GGUFWriter(path, "llama", split_max_tensors=split)
    w.add_name("tiny test model")
    w.add_file_type(LlamaFileType.MOSTLY_Q4_K_M)
    w.add_block_count(LAYERS)
    w.add_context_length(2048)
    w.add_embedding_length(H)
    w.add_feed_forward_length(FF)
    w.add_head_count(4)
    w.add_head_count_kv(kv_heads)
    if tokens:
        w.add_token_list([f"t{i}" for i in range(VOCAB)])
    else:
        w.add_vocab_size(VOCAB)
    if extra is not None:
        extra(w)
    w.add_tensor("token_embd.weight", np.zeros((VOCAB, H), dtype=np.float32))
    for i in range(LAYERS):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(H, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", _quant(H, H, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.attn_k.weight", _quant(H // 2, H, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.attn_v.weight", _quant(H // 2, H, Q.Q6_K), raw_dtype=Q.Q6_K)
        w.add_tensor(f"blk.{i}.attn_output.weight", _quant(H, H, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(H, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", _quant(FF, H, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.ffn_up.weight", _quant(FF, H, Q.Q4_K), raw_dtype=Q.Q4_K)
        w.add_tensor(f"blk.{i}.ffn_down.weight", _quant(H, FF, Q.Q6_K), raw_dtype=Q.Q6_K)
    w.add_tensor("output_norm.weight", np.ones(H, dtype=np.float32))
    w.add_tensor("output.weight", _quant(VOCAB, H, Q.Q6_K), raw_dtype=Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Exact figures of the file above: elements and bytes per type.
Q4K = LAYERS * (H * H + H // 2 * H + H * H + 2 * FF * H)
Q6K = LAYERS * (H // 2 * H + H * FF) + VOCAB * H
F32 = VOCAB * H + LAYERS * 2 * H + H
PARAMS = Q4K + Q6K + F32
BYTES = Q4K * 144 // 256 + Q6K * 210 // 256 + F32 * 4


@pytest.fixture
def gguf_path(tmp_path):
    path = tmp_path / "tiny-Q4_K_M.gguf"
    _write(path)
    return path


def test_exact_parameter_count_and_weight_bytes(gguf_path):
    s = read_gguf(gguf_path)
    assert s.parameters == PARAMS and s.weight_bytes == BYTES
    assert s.architecture == "llama" and s.file_type == "q4_k_m" and s.name == "tiny test model"
    assert {t: (p, b) for t, p, b in s.by_type} == {
        "q4_k": (Q4K, Q4K * 144 // 256),
        "q6_k": (Q6K, Q6K * 210 // 256),
        "f32": (F32, F32 * 4),
    }


def test_model_from_gguf_reads_the_shapes(gguf_path):
    m = model_from_gguf(gguf_path)
    assert (m.num_layers, m.hidden_size, m.num_attention_heads, m.num_key_value_heads) == (LAYERS, H, 4, 2)
    assert m.intermediate_size == FF and m.vocab_size == VOCAB and not m.tied_embeddings
    assert m.published_params == PARAMS and m.file_weight_bytes == BYTES and m.file_type == "q4_k_m"


def test_truncated_file_gives_one_line_naming_it(gguf_path, tmp_path):
    data = gguf_path.read_bytes()
    for keep in (len(data) - 5000, 100):
        cut = tmp_path / "cut.gguf"
        cut.write_bytes(data[:keep])
        with pytest.raises(ModelConfigError) as err:
            read_gguf(cut)
        message = str(err.value)
        assert "cut.gguf" in message and "truncated" in message and "\n" not in message
        assert str(tmp_path) not in message


def test_foreign_and_missing_files_are_named(tmp_path):
    foreign = tmp_path / "weights.gguf"
    foreign.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ModelConfigError, match="weights.gguf is not a GGUF file"):
        read_gguf(foreign)
    with pytest.raises(ModelConfigError, match="no such file: 'absent.gguf'"):
        read_gguf(tmp_path / "absent.gguf")


def test_split_files_are_read_together(tmp_path):
    _write(tmp_path / "tiny.gguf", split=10)
    shards = sorted(p.name for p in tmp_path.glob("*.gguf"))
    assert len(shards) > 1 and shards[0].endswith("-00001-of-" + f"{len(shards):05d}.gguf")
    s = read_gguf(tmp_path / shards[0])
    assert s.files == len(shards) and s.parameters == PARAMS and s.weight_bytes == BYTES
    (tmp_path / shards[-1]).unlink()
    with pytest.raises(ModelConfigError, match=f"missing {shards[-1]}"):
        read_gguf(tmp_path / shards[0])


def test_a_gguf_file_is_a_model_source_in_a_scenario(gguf_path, tmp_path):
    scenario_file = tmp_path / "s.json"
    scenario_file.write_text(
        json.dumps(
            {
                "model": {"gguf": gguf_path.name},
                "workload": {"kind": "inference", "weights": "q4_k_m"},
                "hardware": {"gpu": "apple-m1", "gpu_count": 1},
            }
        ),
        encoding="utf-8",
    )
    est = estimate(load_scenario(scenario_file), load_gpu_catalog(), load_model_catalog())
    assert est.memory_model.weight_bytes == pytest.approx(BYTES)
    assert est.model.published_params == PARAMS


# --- metadata arrays: one value per layer ---------------------------------------------------------
def test_a_per_layer_kv_head_array_is_read_as_its_values(tmp_path):
    """A hybrid's layers: KV heads in one layer, none in the other (a recurrent layer), as llama.cpp
    writes head_count_kv for Jamba or LFM2. The largest per-layer count is used for every layer (an
    upper bound on the KV cache), and the model's notes say by how much; the array's length (2, the
    layer count) must not be taken for a head count."""
    path = tmp_path / "hybrid.gguf"
    _write(path, kv_heads=[4, 0])
    md = read_gguf(path).metadata
    assert md["llama.attention.head_count_kv"] == GgufArray(2, (4, 0), numbers=True)
    m = model_from_gguf(path)
    assert m.num_key_value_heads == 4 and m.num_attention_heads == 4
    assert "llama.attention.head_count_kv differs between layers (0 to 4, 2 values)" in m.notes
    assert "the KV cache is an upper bound, 2x the file's per-layer sum (1 of 2 layers" in m.notes
    same = tmp_path / "same.gguf"
    _write(same, kv_heads=[1, 1])  # equal in every layer: that value, and no note
    m = model_from_gguf(same)
    assert m.num_key_value_heads == 1 and "differs between layers" not in m.notes


def test_the_vocabulary_size_is_the_token_lists_length(tmp_path):
    path = tmp_path / "tokens.gguf"
    _write(path, tokens=True)
    md = read_gguf(path).metadata
    tokens = md["tokenizer.ggml.tokens"]
    assert tokens.length == VOCAB and tokens.values is None  # strings: the length only
    assert model_from_gguf(path).vocab_size == VOCAB


@pytest.mark.parametrize(
    ("value_type", "values", "message"),
    [
        (GGUFValueType.STRING, ["a", "b"], "is an array of 2 elements that are not numbers one per layer"),
        (GGUFValueType.FLOAT32, [1.5, 2.0], "llama.attention.head_count_kv[0] must be a whole number"),
    ],
)
def test_a_per_layer_array_of_anything_else_is_refused_in_one_line(tmp_path, value_type, values, message):
    def swap(w):  # head_count_kv as an array of another element type
        w.add_key_value("llama.attention.head_count_kv", values, GGUFValueType.ARRAY, sub_type=value_type)

    path = tmp_path / "odd.gguf"
    _write(path, extra=swap)
    with pytest.raises(ModelConfigError) as err:
        model_from_gguf(path)
    assert message in str(err.value) and "\n" not in str(err.value) and "odd.gguf" in str(err.value)


def test_array_values_are_kept_only_up_to_the_cap(tmp_path):
    """Values are materialised for arrays of at most MAX_ARRAY_VALUES numbers; a longer one keeps
    its length only, so a file cannot make the reader hold more than the cap."""
    path = tmp_path / "long.gguf"
    _write(path, extra=lambda w: w.add_array("test.long", bytes(MAX_ARRAY_VALUES + 1)))
    md = read_gguf(path).metadata
    assert md["test.long"].length == MAX_ARRAY_VALUES + 1 and md["test.long"].values is None
    assert repr(md["test.long"]) == "an array of 100,001 elements"
    # ... and at most MAX_KEPT_VALUES values in all: the eleventh array of 100,000 keeps its length.
    many = tmp_path / "many.gguf"

    def arrays(w):
        for i in range(MAX_KEPT_VALUES // MAX_ARRAY_VALUES + 1):
            w.add_array(f"test.a{i:02d}", bytes(MAX_ARRAY_VALUES))

    _write(many, extra=arrays)
    md = read_gguf(many).metadata
    kept = [md[f"test.a{i:02d}"].values is not None for i in range(MAX_KEPT_VALUES // MAX_ARRAY_VALUES + 1)]
    assert sum(kept) == MAX_KEPT_VALUES // MAX_ARRAY_VALUES and not kept[-1]
    assert model_from_gguf(many).num_key_value_heads == 2  # the shape keys came first, and were kept
