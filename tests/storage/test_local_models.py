"""Models on disk: a Hugging Face cache, an LM Studio folder and an Ollama store laid out as those tools do."""

import json
import shutil
from pathlib import Path

import numpy as np
from gguf import GGUFWriter

from gpuadvisor.core.formats.gguf_file import read_gguf
from gpuadvisor.core.formats.hf_import import model_from_hf_config
from gpuadvisor.storage.local_models import (
    default_gguf_folders,
    hf_cache_dir,
    scan_gguf_folder,
    scan_hf_cache,
    scan_local_models,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"


def _gguf(path: Path, split: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    w = GGUFWriter(path, "llama", split_max_tensors=split)
    w.add_block_count(1)
    w.add_embedding_length(32)
    w.add_head_count(4)
    w.add_tensor("token_embd.weight", np.zeros((100, 32), dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _hf_repo(cache: Path, repo: str, commit: str = "0123abcd") -> Path:
    folder = cache / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit, encoding="utf-8")
    (folder / "blobs").mkdir()
    blob = folder / "blobs" / "abc"
    shutil.copyfile(DATA / "Qwen3-8B" / "config.json", blob)
    (snapshot / "config.json").symlink_to(blob)
    return snapshot


def test_cache_folder_follows_the_hub_variables(tmp_path):
    assert hf_cache_dir({"HF_HUB_CACHE": str(tmp_path / "a")}) == tmp_path / "a"
    assert hf_cache_dir({"HF_HOME": str(tmp_path / "h")}) == tmp_path / "h" / "hub"
    assert hf_cache_dir({"XDG_CACHE_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "huggingface" / "hub"


def test_hf_cache_entries_load_as_hf_config_sources(tmp_path):
    cache = tmp_path / "hub"
    snapshot = _hf_repo(cache, "Qwen/Qwen3-8B")
    _gguf(cache / "models--someone--tiny-GGUF" / "snapshots" / "feed" / "tiny-Q4_K_M.gguf")
    found = {m.name: m for m in scan_hf_cache(cache)}
    assert set(found) == {"Qwen/Qwen3-8B", "someone/tiny-GGUF/tiny-Q4_K_M.gguf"}
    qwen = found["Qwen/Qwen3-8B"]
    assert (
        qwen.source == {"hf_config": str(snapshot)} and qwen.format == "safetensors" and qwen.size_bytes > 0
    )
    assert model_from_hf_config(qwen.source["hf_config"]).num_layers == 36
    tiny = found["someone/tiny-GGUF/tiny-Q4_K_M.gguf"]
    assert read_gguf(tiny.source["gguf"]).architecture == "llama"


def test_gguf_folder_lists_split_sets_once(tmp_path):
    folder = tmp_path / "models"
    _gguf(folder / "publisher" / "model" / "small.gguf")
    _gguf(folder / "big" / "big.gguf", split=1)  # one tensor per shard: a two-file set
    found = {m.name: m for m in scan_gguf_folder(folder)}
    assert set(found) == {"small", "big"}
    big = found["big"]
    assert big.path.name == "big-00001-of-00002.gguf"
    assert big.size_bytes == sum(p.stat().st_size for p in (folder / "big").iterdir())
    assert read_gguf(big.source["gguf"]).files == 2


def test_ollama_store_is_read_through_its_manifests(tmp_path):
    store = tmp_path / "ollama"
    blob = store / "blobs" / ("sha256-" + "ab" * 32)
    _gguf(blob)
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / "llama3.2" / "3b"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "layers": [
                    {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "cd" * 32},
                    {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + "ab" * 32},
                ]
            }
        ),
        encoding="utf-8",
    )
    found = scan_gguf_folder(store, "ollama")
    assert [(m.name, m.origin) for m in found] == [("llama3.2:3b", "ollama")]
    assert read_gguf(found[0].source["gguf"]).tensors == 2


def test_scan_local_models_uses_existing_default_folders(tmp_path, monkeypatch):
    home = Path.home()  # the test's own HOME (conftest)
    _gguf(home / ".lmstudio" / "models" / "pub" / "m" / "m-Q8_0.gguf")
    env = {"HF_HUB_CACHE": str(tmp_path / "none")}
    assert [o for o, _ in default_gguf_folders(env)] == ["lm-studio"]
    extra = tmp_path / "mine"
    _gguf(extra / "x.gguf")
    names = {(m.name, m.origin) for m in scan_local_models([extra], env=env)}
    assert names == {("m-Q8_0", "lm-studio"), ("x", "folder")}
