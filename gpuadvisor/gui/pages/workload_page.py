"""Wizard page 1: what runs (workload kind, batch or service, lengths, training settings, engine, GPUs)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from ...core.formats.scenario import Scenario
from ...core.specs.constants import engine_for
from ...core.specs.engines import DEFAULT_INFERENCE_ENGINE, RECORDS, engine_lineage, engine_of
from ...core.specs.hardware import HOST_DEFAULTS, GpuCatalog, GpuSpec, MachineClass
from ...core.specs.workload import Offload, adapt_to_kind
from ...core.vocabulary import (
    OPTIMIZER_SHARDINGS,
    OffloadTarget,
    Optimizer,
    Parallelism,
    Recompute,
    WorkloadKind,
)
from ..widgets import ElidedComboBox, NumberField, hint
from .serving_box import ServingBox

#: llama.cpp's KV cache types offered (``workload.kv_cache_dtype``; "" keeps its default, f16).
LLAMA_KV_TYPES = [
    ("", "f16 (llama.cpp's default)"),
    ("q8_0", "q8_0 (half the cache)"),
    ("q4_0", "q4_0 (a quarter)"),
]

#: The window's lists hold the core's vocabularies (core/vocabulary.py) with their labels.
#: "serving" is inference with traffic and latency targets (``workload.serving``): the core sizes a fleet.
SERVING = "serving"
KINDS = [
    (WorkloadKind.INFERENCE, "Inference (a batch of requests)"),
    (SERVING, "Serving (traffic and latency targets)"),
    (WorkloadKind.LORA, "LoRA fine-tuning"),
    (WorkloadKind.QLORA, "QLoRA fine-tuning"),
    (WorkloadKind.FULL_FINETUNE, "Full fine-tuning"),
    (WorkloadKind.PRETRAIN, "Pre-training"),
]
OPTIMIZERS = [
    (Optimizer.ADAMW, "AdamW"),
    (Optimizer.ADAMW_8BIT, "8-bit AdamW"),
    (Optimizer.SGD, "SGD with momentum"),
    (Optimizer.ADAFACTOR, "Adafactor"),
]
TARGETS = [
    ("all_linear", "All linear layers"),
    ("q_proj,k_proj,v_proj,o_proj", "Attention only (q, k, v, o)"),
    ("q_proj,v_proj", "Query and value (q, v)"),
]
PARALLELISMS = [
    ("", "Let the advisor choose"),
    (Parallelism.DDP, "Data parallel (DDP)"),
    (Parallelism.ZERO1, "ZeRO-1"),
    (Parallelism.ZERO2, "ZeRO-2"),
    (Parallelism.ZERO3, "ZeRO-3"),
    (Parallelism.FSDP, "FSDP"),
    (Parallelism.TENSOR, "Tensor parallel"),
    (Parallelism.PIPELINE, "Pipeline parallel"),
]
RECOMPUTE = [
    ("", "As checkpointing says"),
    (Recompute.NONE, "None"),
    (Recompute.SELECTIVE, "Selective (attention)"),
    (Recompute.OP, "Per operator (every other matmul)"),
    (Recompute.FULL, "Full (every layer)"),
]
#: QLoRA: whether PEFT's k-bit preparation cast the base's 16-bit weights to fp32 (``workload.kbit_preparation``).
KBIT_PREPARATION = [
    (None, "As the engine does"),
    (True, "Yes: fp32 embeddings, head and norms"),
    (False, "No: kept in 16 bits"),
]
OFFLOAD = [
    (OffloadTarget.NONE, "On the GPU"),
    (OffloadTarget.CPU, "Host RAM (CPU)"),
    (OffloadTarget.NVME, "NVMe"),
]
SEARCH_UP_TO = [
    (0, "One node (8 GPUs)"),
    (64, "64 GPUs"),
    (512, "512 GPUs"),
    (4096, "4,096 GPUs"),
    (16384, "16,384 GPUs"),
]
COUNTS = [
    (0, "Let the advisor choose (1, 2, 4, 8)"),
    (1, "1"),
    (2, "2"),
    (4, "4"),
    (8, "8"),
    (16, "16 (2 nodes)"),
    (32, "32 (4 nodes)"),
    (64, "64 (8 nodes)"),
]


#: The GPU choice's groups before the single GPUs: the value is "segment:<name>" or "" (whole catalog).
SEGMENT_DATA_CENTRE, SEGMENT_LOCAL = "segment:data_centre", "segment:local"
GPU_GROUPS = [
    (SEGMENT_DATA_CENTRE, "All data-centre GPUs"),
    (SEGMENT_LOCAL, "All laptop & desktop GPUs"),
    ("", "The whole catalog"),
]


def _combo(items: Iterable[tuple[object, str]], tooltip: str) -> QComboBox:
    box = ElidedComboBox()
    for value, label in items:
        box.addItem(label, value)
    box.setToolTip(tooltip)
    box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    box.setMinimumContentsLength(16)
    return box


def _number(key: str, placeholder: str, tooltip: str) -> NumberField:
    """A number field with the scenario key's one rule (the core's ``FIELD_RULES``)."""
    field = NumberField(placeholder, key=key)
    field.setToolTip(tooltip)
    return field


def _axis(field: NumberField, label: str) -> int | None:
    """A layout axis as the scenario keeps it: None for 1 (or empty)."""
    value = _read(field, label)
    return int(value) if value is not None and value > 1 else None


def _shard_group(field: NumberField) -> int | None:
    """The hybrid-sharding group as the scenario keeps it: None when empty (one group of all)."""
    value = _read(field, "Shard group")
    return int(value) if value is not None else None


def _read(field: NumberField, label: str) -> float | None:
    """The field's value; a ``ValueError`` that names the field's label (shown with its page)."""
    try:
        return field.value()
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None


def _select(box: QComboBox, value: object) -> None:
    index = box.findData(value)
    box.setCurrentIndex(max(index, 0))


class WorkloadPage(QWidget):
    """Inputs of the workload and the hardware; ``apply`` writes them into a scenario."""

    edited = Signal()
    title = "Workload"

    def __init__(self, gpus: GpuCatalog, parent: QWidget | None = None):
        super().__init__(parent)
        self._filling = False
        self.kind = _combo(
            KINDS,
            "What you want to do with the model. Inference needs the weights and a KV cache; "
            "LoRA and QLoRA train small adapters on a frozen base; full fine-tuning and "
            "pre-training also need gradients and optimizer state (about 16 bytes per "
            "parameter with AdamW in mixed precision).",
        )
        self.engine = ElidedComboBox()
        self.engine.setToolTip(
            "The software stack. Each has efficiency factors fitted to published measurements "
            "(docs/estimation.md): an optimized server such as TensorRT-LLM gets closer to the "
            "hardware limits than eager PyTorch."
        )
        self.batch = NumberField("1", key="workload.batch_size")
        self.seq_len = _number(
            "workload.seq_len",
            "2048",
            "Tokens per training sequence. Activation memory grows with it "
            "(quadratically without FlashAttention).",
        )
        self.prompt = _number(
            "workload.prompt_tokens",
            "1024",
            "Tokens in each request's prompt. Prefill time and the KV cache grow with it.",
        )
        self.output = _number(
            "workload.output_tokens",
            "256",
            "Tokens generated per request. Decoding is usually limited by memory "
            "bandwidth: every new token reads all the weights once.",
        )
        self.requests = NumberField("none: a session", optional=True, key="workload.requests")
        self.requests.setToolTip(
            "How many requests the job serves (for job time and cost). Empty: 10,000 on data-centre GPUs; "
            "on the machine you own, an interactive session with no job to time or price."
        )
        self.train_tokens = NumberField("1e8", optional=True, key="workload.train_tokens")
        self.train_tokens.setToolTip(
            "Tokens to train on in total (dataset tokens x epochs), e.g. 5e8 or 500M. Empty: 100M."
        )
        self.dataset_tokens = NumberField("e.g. 200M", optional=True, key="workload.dataset_tokens")
        self.dataset_tokens.setToolTip(
            "Tokens in your dataset; with epochs, used when 'Tokens to train' is empty."
        )
        self.epochs = NumberField("1", optional=True, key="workload.epochs")
        self.epochs.setToolTip("Passes over the dataset.")
        self.optimizer = _combo(
            OPTIMIZERS,
            "AdamW keeps two fp32 moments per trained parameter (8 bytes); 8-bit "
            "AdamW keeps 2 bytes; SGD 4; Adafactor almost nothing.",
        )
        self.checkpointing = QCheckBox("Gradient checkpointing")
        self.checkpointing.setToolTip(
            "Recomputes activations in the backward pass instead of storing them: cuts "
            "activation memory a lot for about 20-30% more training time."
        )
        self.flash = QCheckBox("FlashAttention")
        self.flash.setToolTip(
            "Computes attention without storing the full attention matrix. Without it, memory "
            "grows with the square of the sequence length."
        )
        self.lora_rank = _number(
            "workload.lora_rank",
            "16",
            "LoRA rank: adapter size. 8-64 is typical; larger ranks add trainable "
            "parameters (rank x (in + out) per targeted layer).",
        )
        self.lora_targets = _combo(
            TARGETS + [("custom", "Custom…")],
            "Which projections get adapters. All linear layers matches full fine-tuning best (QLoRA paper).",
        )
        self.kbit_preparation = _combo(
            KBIT_PREPARATION,
            "QLoRA: PEFT's prepare_model_for_kbit_training (called by TRL's SFTTrainer and Axolotl) casts "
            "the weights left in 16 bits (embeddings, head, norms) to fp32, which makes the hidden states "
            "fp32 on one GPU or DDP. The Hugging Face Trainer profile assumes it; the QLoRA paper's "
            "qlora.py casts them back to 16 bits.",
        )
        self.custom_targets = QLineEdit()
        self.custom_targets.setPlaceholderText("q_proj, v_proj, up_proj")
        self.custom_targets.setToolTip("Comma-separated module names, as in PEFT's target_modules.")
        self.gpu = ElidedComboBox()
        self.set_gpus(gpus)
        self.gpu.setToolTip(
            "Compare the data-centre GPUs (rented or bought for a cluster), the laptop and "
            "desktop GPUs (Apple silicon, GeForce, Radeon: will it run on my machine?), the whole "
            "catalog, or one GPU model."
        )
        self.engine.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpu.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.gpus = gpus
        self.mac_memory = ElidedComboBox()
        self.mac_memory.setToolTip(
            "The memory of your Mac: the GPU shares it with macOS, and Metal lets it use "
            "about two thirds (36 GB or less) or three quarters of it by default. "
            "'sudo sysctl iogpu.wired_limit_mb=<MiB>' raises the limit until the next "
            "restart."
        )
        self.count = _combo(
            COUNTS,
            "How many GPUs work on the job. When one card is not enough, 4-8 GPUs with "
            "NVLink usually beat a single bigger card.",
        )
        self.parallelism = _combo(
            PARALLELISMS,
            "How the GPUs share the work. DDP replicates everything; ZeRO and "
            "FSDP shard optimizer state, gradients and weights; tensor and "
            "pipeline parallelism split the model itself.",
        )

        # Advanced layout (large training jobs): out of the way unless asked for.
        self.tp = _number(
            "hardware.tensor_parallel", "1", "Tensor parallel: GPUs that split every layer (inside one node)."
        )
        self.pp = _number(
            "hardware.pipeline_parallel", "1", "Pipeline parallel: stages the layers are split into."
        )
        self.cp = _number(
            "hardware.context_parallel",
            "1",
            "Context parallel: GPUs that split every sequence (ring attention).",
        )
        self.shard = NumberField("all", optional=True, key="hardware.data_parallel_shard")
        self.shard.setToolTip(
            "Hybrid sharding (HSDP): ZeRO or FSDP shards the training state over groups of this many "
            "data-parallel GPUs and keeps a copy per group, so the gathers stay inside a node. "
            "Empty: one group of every data-parallel GPU."
        )
        self.recompute = _combo(
            RECOMPUTE,
            "Activation recomputation: selective recomputes the attention core (little time), "
            "full keeps only each layer's input and recomputes the layer (about a third more compute).",
        )
        self.offload_optimizer = _combo(
            OFFLOAD,
            "Where the optimizer state lives (ZeRO-Offload): host RAM or NVMe free the GPU of "
            "it at the cost of PCIe traffic and a CPU optimizer step.",
        )
        self.offload_parameters = _combo(
            OFFLOAD,
            "Where the weights live between uses (ZeRO-Infinity, FSDP CPU offload): the GPU keeps "
            "only the layers being computed. Needs ZeRO-3 or FSDP with several GPUs.",
        )
        self.host_memory = NumberField("not checked", optional=True, key="hardware.host_memory_gib")
        self.host_memory.setToolTip(
            "Host RAM per node available to the job, GiB; offloaded state must fit in it."
        )
        self.global_batch = NumberField(
            "one micro-batch per GPU", optional=True, key="workload.global_batch_size"
        )
        self.global_batch.setToolTip(
            "Sequences per optimizer step: sets the micro-batches per pipeline and so the pipeline bubble."
        )
        self.search_up_to = _combo(
            SEARCH_UP_TO,
            "When the GPU count is left to the advisor: also try whole nodes up to this many GPUs, "
            "each with the fastest tensor x pipeline x context x data layout that fits.",
        )
        self.form_layout = QFormLayout()
        self.form_layout.addRow("Tensor parallel", self.tp)
        self.form_layout.addRow("Pipeline parallel", self.pp)
        self.form_layout.addRow("Context parallel", self.cp)
        self.form_layout.addRow("Shard group", self.shard)
        self.form_layout.addRow("Recomputation", self.recompute)
        self.form_layout.addRow("Optimizer state", self.offload_optimizer)
        self.form_layout.addRow("Weights", self.offload_parameters)
        self.form_layout.addRow("Host RAM per node (GiB)", self.host_memory)
        self.form_layout.addRow("Global batch", self.global_batch)
        self.form_layout.addRow("Search up to", self.search_up_to)
        self.layout_body = QWidget()
        self.layout_body.setLayout(self.form_layout)
        self.layout_box = QGroupBox("Advanced layout")
        self.layout_box.setCheckable(True)
        self.layout_box.setChecked(False)
        self.layout_box.setToolTip(
            "Tick to lay out a large training job yourself: tensor, pipeline and context "
            "parallelism, recomputation, offload. Unticked, the advisor chooses."
        )
        box_layout = QVBoxLayout(self.layout_box)
        box_layout.setContentsMargins(6, 2, 6, 2)
        box_layout.addWidget(self.layout_body)
        self.layout_body.setVisible(False)
        self._fold_layout_box(False)
        self.layout_box.toggled.connect(self._on_layout_toggled)

        self.form_job = QFormLayout()
        self.form_job.addRow("Workload", self.kind)
        self.form_job.addRow("Engine", self.engine)
        self.form_job.addRow("Batch", self.batch)
        self.form_job.addRow("Sequence length", self.seq_len)
        self.form_job.addRow("Prompt tokens", self.prompt)
        self.form_job.addRow("Output tokens", self.output)
        self.form_job.addRow("Requests to serve", self.requests)
        self.form_job.addRow("Tokens to train", self.train_tokens)
        self.form_job.addRow("or dataset tokens", self.dataset_tokens)
        self.form_job.addRow("× epochs", self.epochs)
        job = QGroupBox("Job")
        job.setLayout(self.form_job)
        self.serving_box = ServingBox()
        self.serving_box.edited.connect(self._on_input_changed)

        self.form_train = QFormLayout()
        self.form_train.addRow("Optimizer", self.optimizer)
        self.form_train.addRow(self.checkpointing)
        self.form_train.addRow(self.flash)
        self.form_train.addRow("LoRA rank", self.lora_rank)
        self.form_train.addRow("LoRA targets", self.lora_targets)
        self.form_train.addRow("Custom targets", self.custom_targets)
        self.form_train.addRow("k-bit preparation", self.kbit_preparation)
        self.train_box = QGroupBox("Training and attention")
        self.train_box.setLayout(self.form_train)

        hw = QFormLayout()
        hw.addRow("GPU", self.gpu)
        hw.addRow("Mac memory", self.mac_memory)
        hw.addRow("GPU count", self.count)
        hw.addRow("Parallelism", self.parallelism)
        self.bridge = QCheckBox("NVLink bridge joins each pair")
        self.bridge.setToolTip(
            "These cards take an NVLink bridge over the top of two of them. Tick if your pairs are "
            "bridged: two cards then talk over NVLink, more still over PCIe. Unticked, they all talk "
            "over PCIe (the bridge is an accessory: rented servers rarely have one)."
        )
        hw.addRow(self.bridge)
        self.form_hw = hw
        hw_box = QGroupBox("GPUs")
        hw_box.setLayout(hw)

        # The machine the user owns, on llama.cpp: layers on the GPU, the KV cache type, the host.
        self.gpu_layers = NumberField(
            "automatic: the most that fit", optional=True, key="workload.gpu_layers"
        )
        self.gpu_layers.setToolTip(
            "llama.cpp's -ngl: how many layers sit on the GPU; the rest and the output layer run on "
            "the CPU from system RAM, read at its bandwidth. Empty: the advisor offers the most that fit "
            "(the answer says how many)."
        )
        self.kv_type = _combo(
            LLAMA_KV_TYPES,
            "llama.cpp's KV cache type (--cache-type-k/-v): q8_0 halves the cache and q4_0 quarters it, "
            "so a longer context fits; a quantized V cache needs FlashAttention.",
        )
        self.system_ram = NumberField(
            "assumed for the machine", optional=True, key="hardware.host_memory_gib"
        )
        self.system_ram.setToolTip(
            "System RAM the layers kept off the GPU may use, GiB (your RAM less what the system and your "
            "apps need). Empty: the machine class's default, which the answer states."
        )
        self.ram_bandwidth = NumberField(
            "assumed for the machine", optional=True, key="hardware.host_memory_bandwidth_gb_s"
        )
        self.ram_bandwidth.setToolTip(
            "Bandwidth of the system RAM, GB/s: channels x 8 bytes x transfer rate (dual-channel DDR5-5600: "
            "89.6; DDR4-3200: 51.2). The CPU reads the layers kept off the GPU at it, so it sets their speed."
        )
        self.form_local = QFormLayout()
        self.form_local.addRow("Layers on the GPU", self.gpu_layers)
        self.form_local.addRow("KV cache type", self.kv_type)
        self.form_local.addRow("System RAM (GiB)", self.system_ram)
        self.form_local.addRow("RAM bandwidth (GB/s)", self.ram_bandwidth)
        self.local_box = QGroupBox("This machine (llama.cpp)")
        self.local_box.setLayout(self.form_local)
        self.local_box.setToolTip(
            "How llama.cpp runs on the machine you own: layers that do not fit the GPU run on the CPU "
            "from system RAM. A Mac shares one memory pool: nothing is offloaded there."
        )
        self._llama_default = False  # the scenario's default engine is llama.cpp (a GGUF)

        layout = QVBoxLayout(self)
        layout.addWidget(job)
        layout.addWidget(self.serving_box)
        layout.addWidget(self.train_box)
        layout.addWidget(hw_box)
        layout.addWidget(self.local_box)
        layout.addWidget(self.layout_box)
        layout.addWidget(
            hint("Every change updates the results at once. Hover over a field for what it changes.")
        )
        layout.addStretch(1)

        for box in (
            self.kind,
            self.engine,
            self.optimizer,
            self.lora_targets,
            self.kbit_preparation,
            self.gpu,
            self.count,
            self.parallelism,
            self.mac_memory,
            self.recompute,
            self.offload_optimizer,
            self.offload_parameters,
            self.search_up_to,
            self.kv_type,
        ):
            box.currentIndexChanged.connect(self._on_input_changed)
        for field in (
            self.batch,
            self.seq_len,
            self.prompt,
            self.output,
            self.lora_rank,
            self.tp,
            self.pp,
            self.cp,
            self.shard,
            self.host_memory,
            self.global_batch,
            self.gpu_layers,
            self.system_ram,
            self.ram_bandwidth,
        ):
            field.edited.connect(self._on_input_changed)
        for check in (self.checkpointing, self.flash, self.bridge):
            check.toggled.connect(self._on_input_changed)
        for field in (self.requests, self.train_tokens, self.dataset_tokens, self.epochs):
            field.edited.connect(self._on_input_changed)
        self.custom_targets.textEdited.connect(self._on_input_changed)

    # --- filling ---------------------------------------------------------------------------
    def set_scenario(self, scenario: Scenario) -> None:
        """Show the scenario's values (pre-fill) without emitting ``edited``."""
        self._filling = True
        try:
            w, hw = scenario.workload, scenario.hardware
            _select(self.kind, SERVING if w.serving is not None else w.kind)
            self._llama_default = engine_of(replace(w, engine=None), scenario.model) == "llama.cpp"
            self._fill_engines(w.kind, w.engine)
            self.serving_box.set_spec(w.serving, w.prompt_tokens_p90, w.output_tokens_p90, w.speculative)
            self._sync_serving_engine()
            self.batch.set_value(w.batch_size)
            self.seq_len.set_value(w.seq_len)
            self.prompt.set_value(w.prompt_tokens)
            self.output.set_value(w.output_tokens)
            self.requests.set_value(w.requests)
            self.train_tokens.set_value(w.train_tokens)
            self.dataset_tokens.set_value(w.dataset_tokens)
            self.epochs.set_value(w.epochs)
            _select(self.optimizer, w.optimizer)
            self.checkpointing.setChecked(w.gradient_checkpointing)
            self.flash.setChecked(w.flash_attention)
            self.lora_rank.set_value(w.lora_rank)
            _select(self.kbit_preparation, w.kbit_preparation)
            targets = w.lora_targets if isinstance(w.lora_targets, str) else ",".join(w.lora_targets)
            if self.lora_targets.findData(targets) >= 0:
                _select(self.lora_targets, targets)
                self.custom_targets.setText("")
            else:
                _select(self.lora_targets, "custom")
                self.custom_targets.setText(", ".join(t.strip() for t in targets.split(",")))
            _select(self.gpu, hw.gpu or (f"segment:{hw.segment}" if hw.segment else ""))
            self._fill_mac_memory(hw.memory_gib)
            _select(self.count, hw.gpu_count or 0)
            _select(self.parallelism, hw.parallelism or "")
            self.tp.set_value(hw.tensor_parallel or 1)
            self.pp.set_value(hw.pipeline_parallel or 1)
            self.cp.set_value(hw.context_parallel or 1)
            self.shard.set_value(hw.data_parallel_shard)
            self.gpu_layers.set_value(w.gpu_layers)
            _select(self.kv_type, w.kv_cache_dtype or "")
            self.system_ram.set_value(hw.host_memory_gib)
            self.ram_bandwidth.set_value(hw.host_memory_bandwidth_gb_s)
            self.bridge.setChecked(bool(hw.nvlink_bridge))
            self._fill_host_defaults()
            _select(self.recompute, w.activation_recompute or "")
            _select(self.offload_optimizer, w.offload.optimizer)
            _select(self.offload_parameters, w.offload.parameters)
            self.host_memory.set_value(hw.host_memory_gib)
            self.global_batch.set_value(w.global_batch_size)
            _select(self.search_up_to, hw.gpu_count_max if hw.gpu_count_max in (64, 512, 4096, 16384) else 0)
            advanced = bool(
                hw.tensor_parallel
                or hw.pipeline_parallel
                or hw.context_parallel
                or hw.data_parallel_shard
                or w.activation_recompute
                or w.offload.any
                or hw.host_memory_gib
                or w.global_batch_size
                or (hw.gpu_count_max or 0) > 8
            )
            self.layout_box.setChecked(advanced)
            self.layout_body.setVisible(advanced)
            self._fold_layout_box(advanced)
        finally:
            self._filling = False
        self._update_visibility()

    def set_gpus(self, gpus: GpuCatalog) -> None:
        """List the catalog's GPUs (at start and after every catalog edit), keeping the choice.

        A chosen GPU that is no longer in the catalog stays listed as such, so the scenario is not
        changed behind the user's back (the core then says that the GPU is unknown)."""
        self.gpus = gpus
        current = self.gpu.currentData()
        current = SEGMENT_DATA_CENTRE if current is None else current
        self.gpu.blockSignals(True)
        self.gpu.clear()
        for value, label in GPU_GROUPS:
            self.gpu.addItem(label, value)
        self.gpu.insertSeparator(self.gpu.count())
        for local in (False, True):  # data-centre parts first, then laptops and desktops
            for g in gpus:
                if (g.segment == "local") == local:
                    self.gpu.addItem(f"{g.name}" + ("  (laptop/desktop)" if local else ""), g.id)
        if current and self.gpu.findData(current) < 0:
            self.gpu.addItem(f"{current} (not in the catalog)", current)
        _select(self.gpu, current)
        self.gpu.blockSignals(False)

    def _chosen_bridge_card(self) -> bool:
        """Whether the chosen GPU is a PCIe card that takes an NVLink bridge."""
        spec = self._chosen_spec()
        return spec is not None and spec.nvlink_bridge

    def _chosen_mac(self) -> GpuSpec | None:
        """The chosen GPU when it is Apple silicon (its memory is picked here), else None."""
        spec = self._chosen_spec()
        return spec if spec is not None and spec.unified_memory and spec.memory_options_gib else None

    def _fill_mac_memory(self, memory_gib: float | None) -> None:
        """The memory sizes the chosen Mac ships with, each with what its GPU may use."""
        mac = self._chosen_mac()
        self.mac_memory.blockSignals(True)
        self.mac_memory.clear()
        if mac is not None:
            for size in mac.memory_options_gib:
                self.mac_memory.addItem(f"{size:g} GB (GPU may use {mac.capacity_gib(size):.1f} GiB)", size)
            _select(self.mac_memory, memory_gib if memory_gib is not None else mac.memory_gb)
        self.mac_memory.blockSignals(False)
        self.form_hw.setRowVisible(self.mac_memory, mac is not None)

    def _fill_engines(self, kind: str, current: str | None) -> None:
        wanted = "inference" if kind in ("inference", SERVING) else "training"
        self.engine.blockSignals(True)
        self.engine.clear()
        # A service is inference to the core ("serving" is this page's name for inference with
        # traffic): its default engine is the inference one, never a training engine.
        core_kind = "inference" if wanted == "inference" else kind
        default = engine_for(
            "llama.cpp" if wanted == "inference" and self._llama_default else None, core_kind
        )
        self.engine.addItem(f"Default for this workload ({default.name})", "")
        for e in RECORDS.values():
            if e.kind == wanted:
                self.engine.addItem(e.name, e.id)
        _select(self.engine, current or "")
        self.engine.blockSignals(False)

    def _batch_label(self) -> str:
        """The batch field's label as shown ("Concurrent sequences" or "Micro-batch per GPU")."""
        label = self.form_job.labelForField(self.batch)
        return label.text() if isinstance(label, QLabel) else "Batch"

    def _chosen_spec(self) -> GpuSpec | None:
        """The chosen GPU's spec (None for a group or an id the catalog lacks)."""
        gpu_id = self.gpu.currentData() or ""
        return self.gpus.gpus.get(gpu_id) if not gpu_id.startswith("segment:") else None

    def _local_choice(self) -> bool:
        """Whether the GPU choice is the machine the user owns: a laptop or desktop part or all of them."""
        spec = self._chosen_spec()
        return self.gpu.currentData() == SEGMENT_LOCAL or (spec is not None and spec.segment == "local")

    def _llama(self) -> bool:
        """Whether the workload runs on llama.cpp: chosen, or the default for a GGUF."""
        engine = self.engine.currentData() or ""
        return engine_lineage(engine) == "llama.cpp" if engine else self._llama_default

    def _local_on(self) -> bool:
        """Whether the llama.cpp settings apply: inference without traffic targets on llama.cpp."""
        return self.kind.currentData() == "inference" and self._llama()

    def _fill_host_defaults(self) -> None:
        """The system RAM and bandwidth fields' placeholders: the machine class's defaults (the core's)."""
        spec = self._chosen_spec()
        defaults = spec.host_defaults if spec is not None else HOST_DEFAULTS[MachineClass.DESKTOP]
        ram = "not checked" if defaults.ram_gib is None else f"{defaults.ram_gib:g} (assumed)"
        self.system_ram.edit.setPlaceholderText(ram)
        self.ram_bandwidth.edit.setPlaceholderText(f"{defaults.bandwidth_gb_s:g} ({defaults.memory})")
        self.system_ram.setToolTip(
            "System RAM the layers kept off the GPU may use, GiB (your RAM less what the system and your "
            f"apps need). Empty: {ram.split(' ')[0]} GiB, assumed for {defaults.machine}."
        )

    def _update_visibility(self) -> None:
        kind = self.kind.currentData()
        serving = kind == SERVING
        training = kind not in ("inference", SERVING)
        adapters = kind in ("lora", "qlora")
        one_gpu = self.count.currentData() == 1
        mac = self._chosen_mac() is not None
        local = self._local_on()
        self.local_box.setVisible(local)
        self.form_hw.setRowVisible(self.bridge, self._chosen_bridge_card() and self.count.currentData() != 1)
        for widget in (self.gpu_layers, self.system_ram, self.ram_bandwidth):
            self.form_local.setRowVisible(widget, local and not mac)  # a Mac is one memory pool
        self.count.setItemText(
            0, "The GPUs you have (1)" if self._local_choice() else "Let the advisor choose (1, 2, 4, 8)"
        )
        sharded = self.parallelism.currentData() in OPTIMIZER_SHARDINGS
        state = (training, kind, self.lora_targets.currentData() == "custom", serving, one_gpu, sharded)
        if state == getattr(self, "_visibility", None):
            return  # showing rows, even unchanged ones, re-lays out and repaints the whole page
        self._visibility = state
        self.batch.setToolTip(
            "Concurrent sequences served at once: the KV cache grows with each."
            if not training
            else "Micro-batch per GPU: activation memory grows with it. Use gradient "
            "accumulation to reach a larger global batch."
        )
        label = self.form_job.labelForField(self.batch)
        if isinstance(label, QLabel):
            label.setText("Concurrent sequences" if not training else "Micro-batch per GPU")
        self.serving_box.setVisible(serving)
        for widget, show in (
            (self.batch, not serving),  # a service's concurrency is sized by the core
            (self.seq_len, training),
            (self.prompt, not training),
            (self.output, not training),
            (self.requests, kind == "inference"),
            (self.train_tokens, training),
            (self.dataset_tokens, training),
            (self.epochs, training),
        ):
            self.form_job.setRowVisible(widget, show)
        row: QWidget
        for row, show in (
            (self.optimizer, training),
            (self.checkpointing, training),
            (self.lora_rank, adapters),
            (self.lora_targets, adapters),
            (self.custom_targets, adapters and self.lora_targets.currentData() == "custom"),
            (self.kbit_preparation, kind == "qlora"),
        ):
            self.form_train.setRowVisible(row, show)
        self.layout_box.setVisible(training)
        for widget in (self.tp, self.pp, self.cp, self.global_batch):
            self.form_layout.setRowVisible(widget, not one_gpu)
        self.form_layout.setRowVisible(self.shard, sharded and not one_gpu)

    # --- editing ---------------------------------------------------------------------------
    def _fold_layout_box(self, open_: bool) -> None:
        """Unticked, the "Advanced layout" box is its title alone: no empty frame under it."""
        self.layout_box.setFlat(not open_)
        self.layout_box.setMaximumHeight(16777215 if open_ else self.layout_box.fontMetrics().height() + 4)

    def _on_layout_toggled(self, on: bool) -> None:
        self.layout_body.setVisible(on)
        self._fold_layout_box(on)
        if not self._filling:
            self.edited.emit()

    def _on_input_changed(self, *_args: object) -> None:
        if self._filling:
            return
        if self.sender() is self.kind:
            self._fill_engines(self.kind.currentData(), self.engine.currentData() or None)
        if self.sender() is self.gpu:
            self._fill_mac_memory(None)
            self._fill_host_defaults()
        if self.sender() in (self.kind, self.engine):
            self._sync_serving_engine()
        self._update_visibility()
        self.edited.emit()

    def _sync_serving_engine(self) -> None:
        """The serving box shows the per-request time fitted for the engine chosen (or the default one)."""
        self.serving_box.set_engine(self.engine.currentData() or DEFAULT_INFERENCE_ENGINE)

    def apply(self, scenario: Scenario) -> Scenario:
        """The scenario with this page's values; raises ValueError naming the field for bad input."""
        choice = self.kind.currentData()
        kind = "inference" if choice == SERVING else choice
        # A new kind keeps only what still means the same (the core's rule): weights the kind cannot
        # use are replaced, and the batch resets when it changes meaning (concurrent sequences <->
        # micro-batch per GPU). The window then shows the adapted scenario on every page.
        base = adapt_to_kind(scenario.workload, kind)
        kind_changed = kind != scenario.workload.kind
        batch = base.batch_size if kind_changed else int(_read(self.batch, self._batch_label()) or 1)
        targets_key = self.lora_targets.currentData()
        if targets_key == "custom":
            names = tuple(t.strip() for t in self.custom_targets.text().split(",") if t.strip())
            targets: tuple[str, ...] | str = names or "all_linear"
        elif targets_key == "all_linear":
            targets = "all_linear"
        else:
            targets = tuple(targets_key.split(","))
        serving = self.serving_box.spec() if choice == SERVING else None
        speculative = self.serving_box.speculative() if choice == SERVING else None
        tails = (
            self.serving_box.tails()
            if choice == SERVING
            else (base.prompt_tokens_p90, base.output_tokens_p90)
        )
        try:
            requests = self.requests.value()
        except ValueError as exc:
            raise ValueError(f"Requests to serve: {exc}") from None
        try:
            train_tokens = self.train_tokens.value()
        except ValueError as exc:
            raise ValueError(f"Tokens to train: {exc}") from None
        try:
            dataset_tokens = self.dataset_tokens.value()
            epochs = self.epochs.value() or 1.0
        except ValueError as exc:
            raise ValueError(f"Dataset tokens and epochs: {exc}") from None
        advanced = self.layout_box.isChecked() and kind != "inference"
        sharded = self.parallelism.currentData() in OPTIMIZER_SHARDINGS
        local = self._local_on()
        if advanced:
            host_memory = _read(self.host_memory, "Host RAM per node")
        elif local:
            host_memory = _read(self.system_ram, "System RAM")
        else:
            host_memory = None
        bandwidth = (
            _read(self.ram_bandwidth, "RAM bandwidth")
            if local
            else scenario.hardware.host_memory_bandwidth_gb_s
        )
        if local:
            layers = _read(self.gpu_layers, "Layers on the GPU")
            kv_type = self.kv_type.currentData() or None
            local_keys: dict[str, Any] = {  # Workload fields by name
                "gpu_layers": None if layers is None else int(layers),
                "kv_cache_dtype": kv_type,
                # A llama.cpp cache type wins over the generic KV precision (the core takes one of them).
                "kv_cache": None if kv_type else base.kv_cache,
            }
        else:
            local_keys = {}
        try:
            global_batch = self.global_batch.value() if advanced else None
        except ValueError as exc:
            raise ValueError(f"Global batch: {exc}") from None
        layout_keys: dict[str, Any] = {  # Workload fields by name
            "activation_recompute": (self.recompute.currentData() or None) if advanced else None,
            "global_batch_size": int(global_batch) if global_batch else None,
            "offload": Offload(
                optimizer=self.offload_optimizer.currentData(),
                parameters=self.offload_parameters.currentData(),
            )
            if advanced
            else Offload(),
        }
        engine = self.engine.currentData() or None
        workload = replace(
            base,
            **(layout_keys if kind != "inference" else {}),
            **local_keys,
            engine=engine,
            # Where the scenario's engine release computed logits is a fact of that engine (the key has
            # no field here): another engine, or another kind of work, starts from its own habit.
            prompt_logits=base.prompt_logits
            if engine == scenario.workload.engine and not kind_changed
            else None,
            batch_size=batch,
            seq_len=int(_read(self.seq_len, "Sequence length") or 1),
            prompt_tokens=int(_read(self.prompt, "Prompt tokens") or 1),
            output_tokens=int(_read(self.output, "Output tokens") or 1),
            requests=requests,
            train_tokens=train_tokens,
            dataset_tokens=dataset_tokens,
            epochs=float(epochs),
            optimizer=self.optimizer.currentData(),
            gradient_checkpointing=self.checkpointing.isChecked(),
            flash_attention=self.flash.isChecked(),
            lora_rank=int(_read(self.lora_rank, "LoRA rank") or 1),
            lora_targets=targets,
            kbit_preparation=self.kbit_preparation.currentData()
            if kind == "qlora"
            else base.kbit_preparation,
            serving=serving,
            speculative=speculative,
            prompt_tokens_p90=tails[0],
            output_tokens_p90=tails[1],
        )
        choice = self.gpu.currentData() or ""
        segment = choice.removeprefix("segment:") if choice.startswith("segment:") else None
        gpu = None if segment or not choice else choice
        if self._chosen_mac() is not None:
            memory = self.mac_memory.currentData()
        else:  # a memory size set in the scenario file for this GPU (a MIG slice, say) stays
            memory = scenario.hardware.memory_gib if gpu and gpu == scenario.hardware.gpu else None
        hardware = replace(
            scenario.hardware,
            gpu=gpu,
            segment=segment,
            gpu_count=self.count.currentData() or None,
            parallelism=self.parallelism.currentData() or None,
            memory_gib=memory,
            tensor_parallel=_axis(self.tp, "Tensor parallel") if advanced else None,
            pipeline_parallel=_axis(self.pp, "Pipeline parallel") if advanced else None,
            context_parallel=_axis(self.cp, "Context parallel") if advanced else None,
            data_parallel_shard=_shard_group(self.shard) if advanced and sharded else None,
            host_memory_gib=host_memory,
            host_memory_bandwidth_gb_s=bandwidth,
            nvlink_bridge=True if self.bridge.isChecked() and self._chosen_bridge_card() else None,
            gpu_count_max=(self.search_up_to.currentData() or None) if advanced else None,
        )
        return replace(scenario, workload=workload, hardware=hardware)
