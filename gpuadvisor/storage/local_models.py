"""Models already on this computer: the Hugging Face cache and folders of ``.gguf`` files.

Nothing is downloaded and nothing is opened beyond directory listings and small text files
(``refs/main``, Ollama manifests); each entry says how to load it as a scenario model source
(``{"hf_config": folder}`` or ``{"gguf": file}``), and the core reads the headers when it is used.

Hugging Face cache (the layout ``huggingface_hub`` writes; read directly, because the package
itself pulls in an HTTP stack and a native transfer client the offline app does not need)::

    <cache>/models--<org>--<name>/refs/main                 -> commit hash
    <cache>/models--<org>--<name>/snapshots/<hash>/config.json, *.safetensors, *.gguf (links to blobs/)

``<cache>`` is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``,
else ``~/.cache/huggingface/hub`` (huggingface_hub's own order).

GGUF folders: any folder the user adds, plus the defaults that exist: LM Studio
(``~/.lmstudio/models``, older ``~/.cache/lm-studio/models``) and Ollama (``$OLLAMA_MODELS`` or
``~/.ollama/models``), whose weights are content-addressed blobs named by the manifests under
``manifests/<registry>/<namespace>/<model>/<tag>`` (the layer with media type
``application/vnd.ollama.image.model`` is the GGUF file).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_OLLAMA_MODEL = "application/vnd.ollama.image.model"


@dataclass(frozen=True, slots=True)
class LocalModel:
    """One model found on disk and the model source that loads it."""

    name: str
    origin: str  # "huggingface", "lm-studio", "ollama" or "folder"
    path: Path
    size_bytes: int
    source: dict[str, str] = field(default_factory=dict)

    @property
    def format(self) -> str:
        return "gguf" if "gguf" in self.source else "safetensors"


def hf_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, following huggingface_hub's environment variables."""
    env = dict(os.environ) if env is None else env
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def default_gguf_folders(env: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """(origin, folder) of LM Studio's and Ollama's model folders that exist on this computer."""
    env = dict(os.environ) if env is None else env
    home = Path.home()
    candidates = [
        ("lm-studio", home / ".lmstudio" / "models"),
        ("lm-studio", home / ".cache" / "lm-studio" / "models"),
        (
            "ollama",
            Path(env["OLLAMA_MODELS"]).expanduser()
            if env.get("OLLAMA_MODELS")
            else home / ".ollama" / "models",
        ),
    ]
    return [(origin, folder) for origin, folder in candidates if folder.is_dir()]


def scan_hf_cache(cache: Path | None = None) -> list[LocalModel]:
    """Models in the Hugging Face cache that hold a config.json or .gguf files, newest snapshot first."""
    cache = cache or hf_cache_dir()
    found: list[LocalModel] = []
    for repo in _listdir(cache):
        if not repo.name.startswith("models--") or not repo.is_dir():
            continue
        name = repo.name[len("models--") :].replace("--", "/")
        snapshot = _snapshot(repo)
        if snapshot is None:
            continue
        size = _size(repo / "blobs")
        if (snapshot / "config.json").is_file():
            found.append(LocalModel(name, "huggingface", snapshot, size, {"hf_config": str(snapshot)}))
        for gguf in _gguf_files(snapshot):
            found.append(
                LocalModel(f"{name}/{gguf.name}", "huggingface", gguf, _size_of(gguf), {"gguf": str(gguf)})
            )
    return sorted(found, key=lambda m: m.name.lower())


def scan_gguf_folder(folder: Path, origin: str = "folder") -> list[LocalModel]:
    """``.gguf`` files under ``folder`` (split sets once, by their first shard); Ollama's store by manifest."""
    if origin == "ollama" or (folder / "manifests").is_dir() and (folder / "blobs").is_dir():
        return _scan_ollama(folder)
    found = [
        LocalModel(
            f.stem if not _SPLIT.search(f.name) else _SPLIT.sub("", f.name),
            origin,
            f,
            _split_size(f),
            {"gguf": str(f)},
        )
        for f in _gguf_files(folder)
    ]
    return sorted(found, key=lambda m: m.name.lower())


def scan_local_models(
    extra_folders: Iterable[str | Path] = (), include_defaults: bool = True, env: dict[str, str] | None = None
) -> list[LocalModel]:
    """Everything found: the Hugging Face cache, the default GGUF folders and ``extra_folders``."""
    found = scan_hf_cache(hf_cache_dir(env))
    folders = default_gguf_folders(env) if include_defaults else []
    folders += [("folder", Path(f).expanduser()) for f in extra_folders]
    seen: set[Path] = set()
    for origin, folder in folders:
        if folder in seen or not folder.is_dir():
            continue
        seen.add(folder)
        found.extend(scan_gguf_folder(folder, origin))
    return found


# --- helpers -----------------------------------------------------------------------------------------
def _listdir(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _snapshot(repo: Path) -> Path | None:
    """The snapshot ``refs/main`` points to, else the most recently modified one."""
    try:
        ref = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        ref = ""
    if ref and (repo / "snapshots" / ref).is_dir():
        return repo / "snapshots" / ref
    snapshots = [p for p in _listdir(repo / "snapshots") if p.is_dir()]
    if not snapshots:
        return None
    return max(snapshots, key=lambda p: _mtime(p))


def _gguf_files(folder: Path) -> list[Path]:
    """Every .gguf below ``folder``; of a split set only the first shard."""
    out = []
    try:
        for root, _dirs, files in os.walk(folder, followlinks=False):
            for name in files:
                if not name.lower().endswith(".gguf"):
                    continue
                split = _SPLIT.search(name)
                if split and int(split.group(1)) != 1:
                    continue
                out.append(Path(root) / name)
    except OSError:
        return []
    return sorted(out)


def _scan_ollama(folder: Path) -> list[LocalModel]:
    found = []
    manifests = folder / "manifests"
    for root, _dirs, files in os.walk(manifests):
        for tag in files:
            path = Path(root) / tag
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            layers = data.get("layers") if isinstance(data, dict) else None
            model = next(
                (
                    layer
                    for layer in layers or ()
                    if isinstance(layer, dict) and layer.get("mediaType") == _OLLAMA_MODEL
                ),
                None,
            )
            digest = model.get("digest") if model else None
            if not isinstance(digest, str) or ":" not in digest:
                continue
            blob = folder / "blobs" / digest.replace(":", "-")
            if not blob.is_file():
                continue
            parts = path.relative_to(manifests).parts  # registry, namespace, model, tag
            model_name = parts[-2] if len(parts) >= 2 else path.parent.name
            namespace = parts[-3] if len(parts) >= 3 and parts[-3] != "library" else ""
            name = f"{namespace + '/' if namespace else ''}{model_name}:{tag}"
            found.append(LocalModel(name, "ollama", blob, _size_of(blob), {"gguf": str(blob)}))
    return sorted(found, key=lambda m: m.name.lower())


def _split_size(first: Path) -> int:
    split = _SPLIT.search(first.name)
    if not split:
        return _size_of(first)
    count = int(split.group(2))
    stem = first.name[: split.start()]
    return sum(_size_of(first.with_name(f"{stem}-{i:05d}-of-{count:05d}.gguf")) for i in range(1, count + 1))


def _size(folder: Path) -> int:
    return sum(_size_of(p) for p in _listdir(folder))


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
