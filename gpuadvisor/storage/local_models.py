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

The scan never hangs and never fails: small files are read through the guarded reader
(:func:`gpuadvisor.core.files.read_untrusted`: a FIFO as ``refs/main`` or as a manifest is refused,
not waited on), an entry that cannot be read (no permission, a symbolic-link loop) is skipped and
counted (:attr:`LocalScan.unreadable`), and :func:`scan_local_models_report` stops at a time limit,
keeping what it found (the window runs it off its GUI thread).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError
from ..core.files import FileKind, decode_text, parse_json, read_untrusted

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_OLLAMA_MODEL = "application/vnd.ollama.image.model"
_DIGEST = re.compile(r"[a-z0-9]+:[0-9a-fA-F]{1,128}\Z")  # "sha256:<hex>": never a path


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


#: How long a scan may take before it stops with what it found.
SCAN_TIME_LIMIT_S = 10.0


@dataclass
class LocalScan:
    """What a scan found so far: the models, how many entries could not be read, and whether it
    stopped at its time limit. Filled in as the scan goes, so a caller waiting on another thread
    can take what was found when it gives up."""

    models: list[LocalModel] = field(default_factory=list)
    unreadable: int = 0
    timed_out: bool = False
    deadline: float = float("inf")  # time.monotonic() value
    finished: bool = False

    def over(self) -> bool:
        """True (and remembered) once the time limit has passed."""
        if not self.timed_out and time.monotonic() > self.deadline:
            self.timed_out = True
        return self.timed_out

    def problems(self) -> str:
        """One sentence about what was skipped ("" when nothing was)."""
        parts = []
        if self.unreadable:
            n = self.unreadable
            parts.append(
                f"{n} folder{'s' if n != 1 else ''} or file{'s' if n != 1 else ''} could not be read"
            )
        if self.timed_out:
            parts.append("the search stopped at its time limit, so some models may be missing")
        return "; ".join(parts).capitalize() + "." if parts else ""


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError, OSError):
        return None


def _expand(text: str) -> Path:
    try:
        return Path(text).expanduser()
    except RuntimeError:  # ~user of a user that does not exist
        return Path(text)


def hf_cache_dir(env: dict[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, following huggingface_hub's environment variables."""
    env = dict(os.environ) if env is None else env
    if env.get("HF_HUB_CACHE"):
        return _expand(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return _expand(env["HF_HOME"]) / "hub"
    home = _home() or Path(".")
    base = _expand(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
    return base / "huggingface" / "hub"


def default_gguf_folders(env: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """(origin, folder) of LM Studio's and Ollama's model folders that exist on this computer."""
    env = dict(os.environ) if env is None else env
    home = _home()
    candidates: list[tuple[str, Path]] = []
    if home is not None:
        candidates += [
            ("lm-studio", home / ".lmstudio" / "models"),
            ("lm-studio", home / ".cache" / "lm-studio" / "models"),
        ]
    if env.get("OLLAMA_MODELS"):
        candidates.append(("ollama", _expand(env["OLLAMA_MODELS"])))
    elif home is not None:
        candidates.append(("ollama", home / ".ollama" / "models"))
    return [(origin, folder) for origin, folder in candidates if _is_dir(folder)]


def scan_hf_cache(cache: Path | None = None, scan: LocalScan | None = None) -> list[LocalModel]:
    """Models in the Hugging Face cache that hold a config.json or .gguf files, newest snapshot first."""
    scan = scan if scan is not None else LocalScan()
    cache = cache or hf_cache_dir()
    found: list[LocalModel] = []
    for repo in _listdir(cache, scan):
        if scan.over():
            break
        if not repo.name.startswith("models--") or not _is_dir(repo, scan):
            continue
        name = repo.name[len("models--") :].replace("--", "/")
        snapshot = _snapshot(repo, scan)
        if snapshot is None:
            continue
        size = _size(repo / "blobs", scan)
        if _is_file(snapshot / "config.json", scan):
            found.append(LocalModel(name, "huggingface", snapshot, size, {"hf_config": str(snapshot)}))
        for gguf in _gguf_files(snapshot, scan):
            found.append(
                LocalModel(f"{name}/{gguf.name}", "huggingface", gguf, _size_of(gguf), {"gguf": str(gguf)})
            )
    return sorted(found, key=lambda m: m.name.lower())


def scan_gguf_folder(folder: Path, origin: str = "folder", scan: LocalScan | None = None) -> list[LocalModel]:
    """``.gguf`` files under ``folder`` (split sets once, by their first shard); Ollama's store by manifest."""
    scan = scan if scan is not None else LocalScan()
    if origin == "ollama" or _is_dir(folder / "manifests") and _is_dir(folder / "blobs"):
        return _scan_ollama(folder, scan)
    found = [
        LocalModel(
            f.stem if not _SPLIT.search(f.name) else _SPLIT.sub("", f.name),
            origin,
            f,
            _split_size(f),
            {"gguf": str(f)},
        )
        for f in _gguf_files(folder, scan)
    ]
    return sorted(found, key=lambda m: m.name.lower())


def scan_local_models(
    extra_folders: Iterable[str | Path] = (), include_defaults: bool = True, env: dict[str, str] | None = None
) -> list[LocalModel]:
    """Everything found: the Hugging Face cache, the default GGUF folders and ``extra_folders``."""
    return scan_local_models_report(extra_folders, include_defaults, env, time_limit_s=None).models


def scan_local_models_report(
    extra_folders: Iterable[str | Path] = (),
    include_defaults: bool = True,
    env: dict[str, str] | None = None,
    time_limit_s: float | None = SCAN_TIME_LIMIT_S,
    into: LocalScan | None = None,
) -> LocalScan:
    """:func:`scan_local_models` with what it skipped and a time limit; fills ``into`` as it goes."""
    scan = into if into is not None else LocalScan()
    if time_limit_s is not None:
        scan.deadline = time.monotonic() + time_limit_s
    try:
        scan.models.extend(scan_hf_cache(hf_cache_dir(env), scan))
        folders = default_gguf_folders(env) if include_defaults else []
        folders += [("folder", _expand(str(f))) for f in extra_folders]
        seen: set[Path] = set()
        for origin, folder in folders:
            if scan.over():
                break
            if folder in seen or not _is_dir(folder, scan):
                continue
            seen.add(folder)
            scan.models.extend(scan_gguf_folder(folder, origin, scan))
    finally:
        scan.finished = True
    return scan


# --- helpers -----------------------------------------------------------------------------------------
def _is_dir(path: Path, scan: LocalScan | None = None) -> bool:
    try:
        return path.is_dir()
    except OSError:
        if scan is not None:
            scan.unreadable += 1
        return False


def _is_file(path: Path, scan: LocalScan | None = None) -> bool:
    try:
        return path.is_file()
    except OSError:
        if scan is not None:
            scan.unreadable += 1
        return False


def _listdir(folder: Path, scan: LocalScan) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except FileNotFoundError:
        return []
    except OSError:
        scan.unreadable += 1
        return []


def _small_text(path: Path, scan: LocalScan) -> str | None:
    """A small text file (``refs/main``, a manifest), or None when missing or unreadable (counted)."""
    if not os.path.lexists(path):
        return None
    try:
        raw = read_untrusted(path, FileKind.MODEL_MANIFEST)
        return decode_text(raw, path.name)
    except InputError:
        scan.unreadable += 1
        return None


def _snapshot(repo: Path, scan: LocalScan) -> Path | None:
    """The snapshot ``refs/main`` points to, else the most recently modified one."""
    ref = (_small_text(repo / "refs" / "main", scan) or "").strip()
    if (
        ref
        and "/" not in ref
        and "\\" not in ref
        and ref not in (".", "..")
        and _is_dir(repo / "snapshots" / ref, scan)
    ):
        return repo / "snapshots" / ref
    snapshots = [p for p in _listdir(repo / "snapshots", scan) if _is_dir(p, scan)]
    if not snapshots:
        return None
    return max(snapshots, key=lambda p: _mtime(p))


def _gguf_files(folder: Path, scan: LocalScan) -> list[Path]:
    """Every .gguf below ``folder``; of a split set only the first shard."""
    out = []

    def unreadable(_exc: OSError) -> None:
        scan.unreadable += 1

    for root, _dirs, files in os.walk(folder, onerror=unreadable, followlinks=False):
        if scan.over():
            break
        for name in files:
            if not name.lower().endswith(".gguf"):
                continue
            split = _SPLIT.search(name)
            if split and int(split.group(1)) != 1:
                continue
            out.append(Path(root) / name)
    return sorted(out)


def _manifest_blob(folder: Path, path: Path, scan: LocalScan) -> Path | None:
    text = _small_text(path, scan)
    if text is None:
        return None
    try:
        data = parse_json(text, path.name)
    except InputError:
        return None
    layers = data.get("layers") if isinstance(data, dict) else None
    model = (
        next(
            (
                layer
                for layer in layers or ()
                if isinstance(layer, dict) and layer.get("mediaType") == _OLLAMA_MODEL
            ),
            None,
        )
        if isinstance(layers, list)
        else None
    )
    digest = model.get("digest") if model else None
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        return None
    blob = folder / "blobs" / digest.replace(":", "-")
    return blob if _is_file(blob, scan) else None


def _scan_ollama(folder: Path, scan: LocalScan) -> list[LocalModel]:
    found = []
    manifests = folder / "manifests"

    def unreadable(_exc: OSError) -> None:
        scan.unreadable += 1

    for root, _dirs, files in os.walk(manifests, onerror=unreadable):
        if scan.over():
            break
        for tag in files:
            path = Path(root) / tag
            blob = _manifest_blob(folder, path, scan)
            if blob is None:
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


def _size(folder: Path, scan: LocalScan) -> int:
    return sum(_size_of(p) for p in _listdir(folder, scan))


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
