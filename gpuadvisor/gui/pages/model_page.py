"""Wizard page 2: which model (preset search, Hugging Face import, architecture or parameter count)
and at which precision."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from ...core.errors import InputError
from ...core.formats.model_file import file_weights_or_none
from ...core.formats.scenario import ModelSource, Scenario
from ...core.specs.presets import ModelCatalog
from ...core.specs.quant_types import GGUF_WEIGHT_TYPES
from ...core.units import format_count
from ...core.vocabulary import Precision
from ..widgets import ElidedComboBox, NumberField, ToneLabel, hint

#: The weight and KV-cache precisions (the core's vocabulary, core/vocabulary.py) with their labels.
WEIGHTS: list[tuple[str, str]] = [
    (Precision.BF16, "BF16 (2 bytes)"),
    (Precision.FP16, "FP16 (2 bytes)"),
    (Precision.FP32, "FP32 (4 bytes)"),
    (Precision.FP8, "FP8 (1 byte)"),
    (Precision.INT8, "INT8 (1 byte)"),
    (Precision.INT4, "INT4 / AWQ / GPTQ (~0.53 bytes)"),
    (Precision.NF4, "NF4 / QLoRA (~0.52 bytes)"),
] + [(t, f"{t.upper()} (llama.cpp, GGUF)") for t in GGUF_WEIGHT_TYPES]
KV = [
    ("", "Same as the weights (16-bit)"),
    (Precision.BF16, "BF16"),
    (Precision.FP16, "FP16"),
    (Precision.FP8, "FP8"),
    (Precision.INT8, "INT8"),
    (Precision.INT4, "INT4"),
    (Precision.FP32, "FP32"),
]
ARCH_FIELDS = [
    ("num_layers", "Layers"),
    ("hidden_size", "Hidden size"),
    ("num_attention_heads", "Attention heads"),
    ("num_key_value_heads", "KV heads"),
    ("intermediate_size", "MLP width"),
    ("vocab_size", "Vocabulary"),
]


class ModelPage(QWidget):
    """Model source and precision; ``apply`` writes them into a scenario."""

    edited = Signal()
    title = "Model"

    def __init__(self, models: ModelCatalog, parent: QWidget | None = None):
        super().__init__(parent)
        self._filling = False
        self.models = models
        self.hf_path = ""
        self.file_chosen = False
        self._picked_gguf = False  # a .gguf just chosen: apply() sets its weights' engine

        self.source_preset = QRadioButton("A preset")
        # Short enough for the pages' width on a laptop (a radio button's text never wraps).
        self.source_hf = QRadioButton("A model on disk: config.json, folder or .gguf")
        self.source_hf.setToolTip(
            "A Hugging Face config.json, a model folder (config.json with its safetensors) or a .gguf file"
        )
        self.source_arch = QRadioButton("An architecture I enter")
        self.source_params = QRadioButton("Only a parameter count")
        self.sources = QButtonGroup(self)
        for i, b in enumerate((self.source_preset, self.source_hf, self.source_arch, self.source_params)):
            self.sources.addButton(b, i)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search presets: llama 70b, qwen, mixtral…")
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Filter the model presets by name or id.")
        self.preset_list = QListWidget()
        self.preset_list.setToolTip("Presets hold the full architecture and the published parameter count.")
        self._add_preset_items(models)
        self.preset_list.setMinimumHeight(140)

        self.hf_label = QLabel("No file chosen")
        self.hf_label.setWordWrap(True)
        self.hf_file_button = QPushButton("Choose config.json…")
        self.hf_folder_button = QPushButton("Choose model folder…")
        for button in (self.hf_file_button, self.hf_folder_button):
            button.setToolTip(
                "Reads the architecture from config.json; in a folder, the safetensors headers give the "
                "exact parameter count. Weights are never loaded."
            )

        self.arch_fields: dict[str, NumberField] = {}
        arch_form = QFormLayout()
        for key, label in ARCH_FIELDS:
            field = NumberField("", key=f"model.architecture.{key}")
            field.setToolTip(label)
            self.arch_fields[key] = field
            arch_form.addRow(label, field)
        self.gated = QCheckBox("Gated MLP (SwiGLU, as in Llama)")
        self.tied = QCheckBox("Tied input and output embeddings")
        arch_form.addRow(self.gated)
        arch_form.addRow(self.tied)
        self.arch_box = QGroupBox("Architecture")
        self.arch_box.setLayout(arch_form)
        self.arch_box.setToolTip(
            "The shapes decide memory: KV heads below attention heads (grouped-query "
            "attention) shrink the KV cache."
        )

        self.params = NumberField("7e9 or 70B", key="model.parameters")
        self.params.setToolTip(
            "Total parameters, e.g. 7B or 7e9. A Llama-shaped architecture is assumed, so "
            "activation and KV-cache figures are approximate."
        )

        self.weights = ElidedComboBox()
        for value, label in WEIGHTS:
            self.weights.addItem(label, value)
        self.weights.setToolTip(
            "Bytes per weight. A 7B model needs about 14 GB in FP16, 7 GB in FP8/INT8 and "
            "about 4 GB in 4-bit. FP8 runs at full speed only on Ada, Hopper and Blackwell."
        )
        self.kv = ElidedComboBox()
        for value, label in KV:
            self.kv.addItem(label, value)
        self.kv.setToolTip(
            "Precision of the KV cache. FP8 halves it, which doubles the concurrent requests "
            "that fit for long contexts."
        )
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.message = ToneLabel("", "problem")
        self.message.setWordWrap(True)
        self.message.hide()

        src_box = QGroupBox("Where the model comes from")
        src = QVBoxLayout(src_box)
        src.addWidget(self.source_preset)
        src.addWidget(self.search)
        src.addWidget(self.preset_list)
        src.addWidget(self.source_hf)
        row = QHBoxLayout()
        row.addWidget(self.hf_file_button)
        row.addWidget(self.hf_folder_button)
        src.addLayout(row)
        self.local_models_button = QPushButton("Models on this machine…")
        self.local_models_button.setToolTip(
            "Models already downloaded: the Hugging Face cache (HF_HOME / HF_HUB_CACHE), LM Studio's and "
            "Ollama's model folders. Read offline; only file headers are read."
        )
        self.local_models_button.clicked.connect(self._on_local_models)
        src.addWidget(self.local_models_button)
        src.addWidget(self.hf_label)
        src.addWidget(self.source_arch)
        src.addWidget(self.arch_box)
        src.addWidget(self.source_params)
        src.addWidget(self.params)
        prec = QFormLayout()
        prec.addRow("Weights", self.weights)
        prec.addRow("KV cache", self.kv)
        prec_box = QGroupBox("Precision")
        prec_box.setLayout(prec)

        layout = QVBoxLayout(self)
        layout.addWidget(src_box)
        layout.addWidget(prec_box)
        layout.addWidget(self.summary)
        layout.addWidget(self.message)
        layout.addWidget(
            hint("QLoRA needs a 4-bit (NF4) or 8-bit base; full fine-tuning needs 16- or 32-bit weights.")
        )
        layout.addStretch(1)

        self.sources.idClicked.connect(self._on_input_changed)
        self.search.textChanged.connect(self._on_search_changed)
        self.preset_list.currentItemChanged.connect(self._on_preset_changed)
        self.hf_file_button.clicked.connect(self._on_choose_file)
        self.hf_folder_button.clicked.connect(self._on_choose_folder)
        for field in self.arch_fields.values():
            field.edited.connect(self._on_input_changed)
        for box in (self.gated, self.tied):
            box.toggled.connect(self._on_input_changed)
        self.params.edited.connect(self._on_input_changed)
        self.weights.currentIndexChanged.connect(self._on_weights_changed)
        self.kv.currentIndexChanged.connect(self._on_input_changed)

    # --- filling ---------------------------------------------------------------------------
    def set_scenario(self, scenario: Scenario) -> None:
        self._filling = True
        try:
            src = scenario.model
            if src.preset is not None:
                self.source_preset.setChecked(True)
                self._select_preset(src.preset)
            elif src.hf_config is not None or src.gguf is not None:
                self.source_hf.setChecked(True)
                self.hf_path = src.hf_config or src.gguf or ""
                self.hf_label.setText(self.hf_path)
            elif src.architecture is not None:
                self.source_arch.setChecked(True)
                arch = src.architecture_dict()
                for key, field in self.arch_fields.items():
                    if key in arch:
                        field.set_value(int(arch[key]))
                self.gated.setChecked(bool(arch.get("gated_mlp", True)))
                self.tied.setChecked(bool(arch.get("tied_embeddings", False)))
            else:
                self.source_params.setChecked(True)
                self.params.set_value(src.parameters)
            if src.preset is None and self.preset_list.currentItem() is None:
                self.preset_list.setCurrentRow(0)
            if src.architecture is None:
                self._fill_architecture_from_preset()
            weights = scenario.workload.weights
            if self.weights.findData(weights) < 0:  # never show (and write back) another precision
                self.weights.addItem(weights, weights)
            self.weights.setCurrentIndex(self.weights.findData(weights))
            self.kv.setCurrentIndex(max(0, self.kv.findData(scenario.workload.kv_cache or "")))
        finally:
            self._filling = False
        self._update_enabled()

    def _add_preset_items(self, models: ModelCatalog) -> None:
        for m in models:
            item = QListWidgetItem(
                f"{m.name}  ·  {format_count(m.parameters)}"
                + (f" ({format_count(m.active_parameters)} active)" if m.is_moe else "")
            )
            item.setData(Qt.ItemDataRole.UserRole, m.id)
            item.setToolTip(m.notes or m.source)
            self.preset_list.addItem(item)

    def set_models(self, models: ModelCatalog) -> None:
        """New presets from the catalog editor: refill the list, keeping the chosen preset (and the
        search) where it still exists. Changes no scenario by itself."""
        current = self.preset_list.currentItem()
        chosen = current.data(Qt.ItemDataRole.UserRole) if current is not None else None
        self.models = models
        self._filling = True
        self.preset_list.blockSignals(True)
        try:
            self.preset_list.clear()
            self._add_preset_items(models)
            if chosen is not None:
                self._select_preset(chosen)
        finally:
            self.preset_list.blockSignals(False)
            self._filling = False
        self._on_search_changed(self.search.text())

    def _select_preset(self, preset_id: str) -> None:
        for i in range(self.preset_list.count()):
            if self.preset_list.item(i).data(Qt.ItemDataRole.UserRole) == preset_id:
                self.preset_list.setCurrentRow(i)
                return

    def _fill_architecture_from_preset(self) -> None:
        item = self.preset_list.currentItem()
        if item is None:
            return
        m = self.models.get(item.data(Qt.ItemDataRole.UserRole))
        for key, field in self.arch_fields.items():
            field.set_value(getattr(m, key))
        self.gated.blockSignals(True)
        self.gated.setChecked(m.gated_mlp)
        self.gated.blockSignals(False)
        self.tied.blockSignals(True)
        self.tied.setChecked(m.tied_embeddings)
        self.tied.blockSignals(False)

    def _update_enabled(self) -> None:
        mode = self.sources.checkedId()
        self.search.setEnabled(mode == 0)
        self.preset_list.setEnabled(mode == 0)
        self.hf_file_button.setEnabled(mode == 1)
        self.hf_folder_button.setEnabled(mode == 1)
        self.arch_box.setEnabled(mode == 2)
        self.params.setEnabled(mode == 3)

    # --- slots -----------------------------------------------------------------------------
    def _on_search_changed(self, text: str) -> None:
        words = text.lower().split()
        for i in range(self.preset_list.count()):
            item = self.preset_list.item(i)
            hay = (item.text() + " " + item.data(Qt.ItemDataRole.UserRole)).lower()
            item.setHidden(not all(w in hay for w in words))

    def _on_preset_changed(self, *_args: object) -> None:
        if self._filling:
            return
        self._fill_architecture_from_preset()
        self._on_input_changed()

    def _on_choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Choose a Hugging Face config.json or a .gguf file",
            "",
            "Model files (config.json *.gguf);;config.json (config.json);;GGUF (*.gguf);;JSON files (*.json)",
        )
        if path:
            self.set_hf_path(path)

    def _on_choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Choose a model folder")
        if path:
            self.set_hf_path(path)

    def _on_local_models(self) -> None:
        from ..local_models_dialog import choose_local_model, scan_in_background

        scan = scan_in_background(self)  # off the GUI thread, with a time limit
        if scan is None:
            return
        chosen = choose_local_model(self, scan.models, scan.problems())
        if chosen is not None:
            self.set_hf_path(chosen.source.get("gguf") or chosen.source.get("hf_config") or str(chosen.path))

    def set_hf_path(self, path: str) -> None:
        """Use a config.json, a model folder or a .gguf file (also called by tests and drag-and-drop).

        A .gguf file also sets the weights to the file's own type (its header says which) and the
        engine to llama.cpp, which reads it: the next :meth:`apply` writes both."""
        self.hf_path = path
        self.file_chosen = True  # the same path chosen again may have new content: always recompute
        self.hf_label.setText(path)
        self.source_hf.setChecked(True)
        self._picked_gguf = path.lower().endswith(".gguf")
        if self._picked_gguf:
            weights = file_weights_or_none(path)
            if weights is not None:
                if self.weights.findData(weights) < 0:
                    self.weights.addItem(weights, weights)
                self.weights.blockSignals(True)
                self.weights.setCurrentIndex(self.weights.findData(weights))
                self.weights.blockSignals(False)
        self._on_input_changed()

    def _on_input_changed(self, *_args: object) -> None:
        if self._filling:
            return
        self._update_enabled()
        self.edited.emit()

    def _on_weights_changed(self, *_args: object) -> None:
        self._on_input_changed()

    def show_notice(self, message: str) -> None:
        """A hint under the precision fields (not an error: the scenario stays valid)."""
        self.summary.setText(message)

    def show_error(self, message: str) -> None:
        self.message.setText(message)
        self.message.setVisible(bool(message))

    def show_model(self, text: str) -> None:
        self.summary.setText(text)

    # --- applying --------------------------------------------------------------------------
    def apply(self, scenario: Scenario) -> Scenario:
        """The scenario with this page's model and precision; ValueError/InputError for bad input."""
        mode = self.sources.checkedId()
        if mode == 0:
            item = self.preset_list.currentItem()
            if item is None:
                raise InputError("model.preset", "choose a preset from the list")
            source = ModelSource(preset=item.data(Qt.ItemDataRole.UserRole))
        elif mode == 1:
            if not self.hf_path:
                raise InputError("model.hf_config", "choose a config.json file or a model folder")
            if self.hf_path.lower().endswith(".gguf"):
                source = ModelSource(gguf=self.hf_path)
            else:
                source = ModelSource(hf_config=self.hf_path)
        elif mode == 2:
            arch: dict[str, object] = {}
            for key, label in ARCH_FIELDS:
                try:
                    value = self.arch_fields[key].value()
                except ValueError as exc:
                    raise InputError(f"model.architecture.{key}", f"{label}: {exc}") from None
                arch[key] = int(value or 1)
            arch["gated_mlp"] = self.gated.isChecked()
            arch["tied_embeddings"] = self.tied.isChecked()
            source = ModelSource(architecture=tuple(arch.items()), name="custom architecture")
        else:
            try:
                value = self.params.value()
            except ValueError as exc:
                raise InputError("model.parameters", str(exc)) from None
            source = ModelSource(parameters=value)
        weights = self.weights.currentData()
        changes: dict[str, Any] = {"weights": weights, "kv_cache": self.kv.currentData() or None}
        if getattr(self, "_picked_gguf", False):
            # A .gguf just chosen runs on llama.cpp, which reads it (the Workload page shows the engine).
            changes["engine"] = "llama.cpp"
            changes["quantization"] = None
            self._picked_gguf = False
        if changes["kv_cache"] is not None:
            changes["kv_cache_dtype"] = None  # a generic KV precision replaces llama.cpp's cache type
        workload = replace(scenario.workload, **changes)
        return replace(scenario, model=source, workload=workload)
