"""The Workload page's "Serving" group: the load, the latency targets and how the service runs
(``workload.serving``, ``workload.speculative``).

Shown when the workload is "Serving"; it replaces the batch size (the core sizes the concurrency
itself). The load is a rate of requests (arriving at random or in bursts) or a number of clients,
each sending its next request when its answer ends. The targets are optional: without them the
answer is the operating point at that load. The box only reads and shows values: ``spec()`` builds
the core's ``ServingSpec`` and ``speculative()`` its ``SpeculativeSpec``, whose validation names the
field when a value is out of range.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QGroupBox, QWidget

from ...core.specs.constants import shipped_constants
from ...core.specs.engines import DEFAULT_INFERENCE_ENGINE
from ...core.specs.presets import load_model_catalog
from ...core.specs.serving import PERCENTILES, ArrivalPattern, ServingSpec
from ...core.specs.speculative import METHOD_DEFAULTS, SpeculativeMethod, SpeculativeSpec
from ..widgets import NumberField

#: What a new service starts with (the issue's example: 20 requests/s, 1 s to first token, 20 tokens/s).
DEFAULT_SPEC = ServingSpec(requests_per_s=20.0, ttft_s=1.0, itl_ms=50.0)
#: The load's two forms.
RATE, CLIENTS = "rate", "clients"
#: The proposers of speculative decoding, in the order offered ("" first: none).
METHOD_LABELS = {
    "": "None",
    SpeculativeMethod.EAGLE: "EAGLE head",
    SpeculativeMethod.MTP: "MTP (the model's own)",
    SpeculativeMethod.NGRAM: "N-gram lookup",
    SpeculativeMethod.DRAFT: "Draft model",
}
#: The draft models offered: the catalog's smaller presets.
DRAFT_PRESETS = (
    "llama-3.2-1b",
    "llama-3.2-3b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-4b",
    "tinyllama-1.1b",
    "gemma-3-4b",
)


class ServingBox(QGroupBox):
    """Inputs of a service; ``edited`` fires on every change."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Serving: load, targets and how it runs", parent)
        self.load_kind = QComboBox()
        self.load_kind.addItem("Requests per second", RATE)
        self.load_kind.addItem("Clients (each waits for its answer)", CLIENTS)
        self.load_kind.setToolTip(
            "State the load as a rate of requests, or as a number of clients that each send their next "
            "request when the last answer ends (a closed loop, as a load test or a chat UI runs)."
        )
        self.rate = NumberField("20", key="workload.serving.requests_per_s")
        self.rate.setToolTip("Requests per second the service must carry (e.g. 20, 1.5k).")
        self.clients = NumberField("64", key="workload.serving.concurrency")
        self.clients.setToolTip("Clients sending requests, each waiting for its answer before the next one.")
        self.arrival = QComboBox()
        self.arrival.addItem("At random (Poisson)", ArrivalPattern.POISSON)
        self.arrival.addItem("In bursts", ArrivalPattern.BURST)
        self.arrival.setToolTip(
            "How the requests arrive: independently at random, or in bursts (gaps twice as variable as "
            "random ones), which lengthen the queue."
        )
        self.ttft = NumberField("no target", optional=True, key="workload.serving.ttft_s")
        self.ttft.setToolTip(
            "Target time to first token, in seconds, at the percentile below; waiting in the queue included. "
            "Empty: no target (the answer is what the load gives)."
        )
        self.itl = NumberField("no target", optional=True, key="workload.serving.itl_ms")
        self.itl.setToolTip(
            "Target time between two generated tokens, in milliseconds (50 ms is 20 tokens/s per user), "
            "at the percentile below. Empty: no target."
        )
        self.percentile = QComboBox()
        for p in PERCENTILES:
            self.percentile.addItem(f"p{p}", p)
        self.percentile.setToolTip(
            "The share of requests that must meet the targets: a target is met when even the slow end of "
            "the estimate's 80% range is within it at this percentile, likely met when the expected value is."
        )
        self.prompt_p90 = NumberField("= mean", optional=True, key="workload.prompt_tokens_p90")
        self.prompt_p90.setToolTip(
            "90th-percentile prompt length (a long tail): each sequence reserves more KV cache and a long "
            "prompt takes longer to its first token. Empty: every prompt is the mean."
        )
        self.output_p90 = NumberField("about 2 \u00d7 mean", optional=True, key="workload.output_tokens_p90")
        self.output_p90.setToolTip(
            "90th-percentile output length: more KV cache per sequence and longer, more variable requests. "
            "Empty: answers vary as much as an exponential's (the 90th percentile about twice the mean)."
        )
        self.cache = NumberField("0", key="workload.serving.prefix_cache_hit_rate", percent=True)
        self.cache.setToolTip(
            "Share of prompt tokens found in the prefix cache (a shared system prompt): not prefilled again."
        )
        self.overhead = NumberField(
            self._fitted_placeholder(DEFAULT_INFERENCE_ENGINE),
            optional=True,
            key="workload.serving.request_overhead_ms",
        )
        self.overhead.setToolTip(
            "Time your serving stack adds to every request outside the model's steps, in milliseconds: HTTP, "
            "chat template and tokenizing, scheduling, streaming the first token. It lengthens every time to "
            "first token. Published runs took from about 0 (NIM) to 60 ms (Python API servers). Empty: the "
            "value fitted to the chosen engine's runs."
        )
        self.hours = NumberField("24", key="workload.serving.hours_per_day")
        self.hours.setToolTip("Hours a day the fleet runs: the monthly cost follows them.")
        self.disaggregated = QCheckBox("Prefill and decode on separate GPUs")
        self.disaggregated.setToolTip(
            "Disaggregated serving: a prefill pool sized to the first-token target and a decode pool sized "
            "to the between-token target, the KV cache carried between them. Needs both targets."
        )
        self.method = QComboBox()
        for key, label in METHOD_LABELS.items():
            self.method.addItem(label, key)
        self.method.setToolTip(
            "Speculative decoding: a cheap proposer drafts tokens that the model verifies in one pass. "
            "It speeds up each user at light load and pays less as the batch grows."
        )
        self.draft = QComboBox()
        catalog = load_model_catalog()
        for pid in DRAFT_PRESETS:
            if pid in catalog.models:
                self.draft.addItem(catalog.get(pid).name, pid)
        self.draft.setToolTip("The draft model (same tokenizer as the served model).")
        self.acceptance = NumberField("", optional=True, minimum=0.0, maximum=1.0)
        self.acceptance.setToolTip(
            "Share of drafted tokens the model accepts (0-1). Empty: the method's published default."
        )
        form = QFormLayout(self)
        form.addRow("Load given as", self.load_kind)
        form.addRow("Requests per second", self.rate)
        form.addRow("Clients", self.clients)
        form.addRow("Arrivals", self.arrival)
        form.addRow("First token within (s)", self.ttft)
        form.addRow("Between tokens (ms)", self.itl)
        form.addRow("Percentile", self.percentile)
        form.addRow("Prompt tokens, p90", self.prompt_p90)
        form.addRow("Output tokens, p90", self.output_p90)
        form.addRow("Prefix cache hits", self.cache)
        form.addRow("Per-request time (ms)", self.overhead)
        form.addRow("Hours a day", self.hours)
        form.addRow("", self.disaggregated)
        form.addRow("Speculative decoding", self.method)
        form.addRow("Draft model", self.draft)
        form.addRow("Accepted share", self.acceptance)
        self._form = form
        for field in (
            self.rate,
            self.clients,
            self.ttft,
            self.itl,
            self.prompt_p90,
            self.output_p90,
            self.overhead,
            self.acceptance,
            self.cache,
            self.hours,
        ):
            field.edited.connect(self.edited)
        for combo in (self.percentile, self.arrival, self.draft):
            combo.currentIndexChanged.connect(self.edited)
        self.load_kind.currentIndexChanged.connect(self._on_shape_changed)
        self.method.currentIndexChanged.connect(self._on_shape_changed)
        self.disaggregated.toggled.connect(self.edited)
        self._show_rows()

    @staticmethod
    def _fitted_placeholder(engine_id: str) -> str:
        return f"{shipped_constants().request_overhead_for(engine_id) * 1000:g} (fitted)"

    def _on_shape_changed(self) -> None:
        self._show_rows()
        self.edited.emit()

    def _show_rows(self) -> None:
        """Show the rows the load's form and the proposer need."""
        rate = self.load_kind.currentData() == RATE
        method = self.method.currentData() or ""
        for widget, shown in (
            (self.rate, rate),
            (self.arrival, rate),
            (self.clients, not rate),
            (self.draft, method == SpeculativeMethod.DRAFT),
            (self.acceptance, bool(method)),
        ):
            self._form.setRowVisible(widget, shown)
        if method:
            d = METHOD_DEFAULTS[SpeculativeMethod(method)]
            self.acceptance.edit.setPlaceholderText(f"{d.acceptance_rate:g} (published)")

    def set_engine(self, engine_id: str) -> None:
        """Show the fitted per-request time of the engine that will serve (when none is typed)."""
        self.overhead.edit.setPlaceholderText(self._fitted_placeholder(engine_id))

    def set_spec(
        self,
        spec: ServingSpec | None,
        prompt_p90: int | None,
        output_p90: int | None,
        speculative: SpeculativeSpec | None = None,
    ) -> None:
        """Show a service's values (the defaults when there is none) without emitting ``edited``."""
        spec = spec or DEFAULT_SPEC
        widgets = (
            self.percentile,
            self.load_kind,
            self.arrival,
            self.disaggregated,
            self.method,
            self.draft,
        )
        for w in widgets:
            w.blockSignals(True)
        try:
            closed = spec.concurrency is not None
            self.load_kind.setCurrentIndex(self.load_kind.findData(CLIENTS if closed else RATE))
            self.rate.set_value(spec.requests_per_s if not closed else None)
            self.clients.set_value(spec.concurrency)
            self.arrival.setCurrentIndex(max(0, self.arrival.findData(spec.arrival)))
            self.ttft.set_value(spec.ttft_s)
            self.itl.set_value(spec.itl_ms)
            self.percentile.setCurrentIndex(max(0, self.percentile.findData(spec.percentile)))
            self.cache.set_value(round(spec.prefix_cache_hit_rate * 100, 4))
            self.hours.set_value(spec.hours_per_day)
            self.prompt_p90.set_value(prompt_p90)
            self.output_p90.set_value(output_p90)
            self.overhead.set_value(spec.request_overhead_ms)
            self.disaggregated.setChecked(spec.disaggregated)
            method = "" if speculative is None else str(speculative.method)
            self.method.setCurrentIndex(max(0, self.method.findData(method)))
            if speculative is not None and speculative.draft_model:
                i = self.draft.findData(speculative.draft_model)
                if i < 0:  # a draft model outside the short list stays selectable
                    self.draft.addItem(speculative.draft_model, speculative.draft_model)
                    i = self.draft.count() - 1
                self.draft.setCurrentIndex(i)
            self.acceptance.set_value(None if speculative is None else speculative.acceptance_rate)
        finally:
            for w in widgets:
                w.blockSignals(False)
        self._show_rows()

    def _number(self, label: str, field: NumberField) -> float | None:
        try:
            return field.value()
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None

    def spec(self) -> ServingSpec:
        """The service as the core takes it; raises ValueError naming the field for bad input."""
        rate = self.load_kind.currentData() == RATE
        requests = self._number("Requests per second", self.rate) if rate else None
        clients = self._number("Clients", self.clients) if not rate else None
        if rate and requests is None:
            raise ValueError("Requests per second: type the rate the service must carry")
        if not rate and clients is None:
            raise ValueError("Clients: type how many clients send requests")
        return ServingSpec(
            requests_per_s=None if requests is None else float(requests),
            concurrency=None if clients is None else int(clients),
            arrival=self.arrival.currentData() if rate else ArrivalPattern.POISSON,
            ttft_s=self._number("First token within", self.ttft),
            itl_ms=self._number("Between tokens", self.itl),
            percentile=int(self.percentile.currentData()),
            prefix_cache_hit_rate=float(self._number("Prefix cache hits", self.cache) or 0.0) / 100.0,
            hours_per_day=float(self._number("Hours a day", self.hours) or 24.0),
            request_overhead_ms=self._number("Per-request time", self.overhead),
            disaggregated=self.disaggregated.isChecked(),
        )

    def speculative(self) -> SpeculativeSpec | None:
        """Speculative decoding as chosen (None: off); raises ValueError naming the field."""
        method = self.method.currentData() or ""
        if not method:
            return None
        acceptance = self._number("Accepted share", self.acceptance)
        return SpeculativeSpec(
            method=method,
            draft_model=self.draft.currentData() if method == SpeculativeMethod.DRAFT else None,
            acceptance_rate=acceptance,
        )

    def tails(self) -> tuple[int | None, int | None]:
        """(prompt p90, output p90) as typed (None when empty); raises ValueError naming the field."""
        out = []
        for label, field in (
            ("Prompt tokens, p90", self.prompt_p90),
            ("Output tokens, p90", self.output_p90),
        ):
            value = self._number(label, field)
            out.append(None if value is None else int(value))
        return out[0], out[1]
