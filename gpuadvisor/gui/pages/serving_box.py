"""The Workload page's "Serving" group: traffic, latency targets and hours a day (``workload.serving``).

Shown when the workload is "Serving"; it replaces the batch size (the core sizes the concurrency
itself). The box only reads and shows values: ``spec()`` builds the core's ``ServingSpec``, whose
validation names the field when a value is out of range.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QWidget

from ...core.specs.constants import shipped_constants
from ...core.specs.engines import DEFAULT_INFERENCE_ENGINE
from ...core.specs.serving import PERCENTILES, ServingSpec
from ..widgets import NumberField

#: What a new service starts with (the issue's example: 20 requests/s, 1 s to first token, 20 tokens/s).
DEFAULT_SPEC = ServingSpec(requests_per_s=20.0, ttft_s=1.0, itl_ms=50.0)


class ServingBox(QGroupBox):
    """Inputs of a service; ``edited`` fires on every change."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Serving: traffic and targets", parent)
        self.rate = NumberField("20", key="workload.serving.requests_per_s")
        self.rate.setToolTip(
            "Requests per second the service must carry (arrivals at random, a Poisson stream)."
        )
        self.ttft = NumberField("1", key="workload.serving.ttft_s")
        self.ttft.setToolTip(
            "Target time to first token, in seconds, at the percentile below; waiting in the queue included."
        )
        self.itl = NumberField("50", key="workload.serving.itl_ms")
        self.itl.setToolTip(
            "Target time between two generated tokens, in milliseconds (50 ms is 20 tokens/s per user)."
        )
        self.percentile = QComboBox()
        for p in PERCENTILES:
            self.percentile.addItem(f"p{p}", p)
        self.percentile.setToolTip("The share of requests that must see a first token within the target.")
        self.prompt_p90 = NumberField("= mean", optional=True, key="workload.prompt_tokens_p90")
        self.prompt_p90.setToolTip(
            "90th-percentile prompt length (a long tail): each sequence reserves more KV cache and a long "
            "prompt takes longer to its first token. Empty: the mean."
        )
        self.output_p90 = NumberField("= mean", optional=True, key="workload.output_tokens_p90")
        self.output_p90.setToolTip(
            "90th-percentile output length: more KV cache per sequence and longer, more variable service "
            "times. Empty: the mean."
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
        form = QFormLayout(self)
        form.addRow("Requests per second", self.rate)
        form.addRow("First token within (s)", self.ttft)
        form.addRow("Between tokens (ms)", self.itl)
        form.addRow("Percentile", self.percentile)
        form.addRow("Prompt tokens, p90", self.prompt_p90)
        form.addRow("Output tokens, p90", self.output_p90)
        form.addRow("Prefix cache hits", self.cache)
        form.addRow("Per-request time (ms)", self.overhead)
        form.addRow("Hours a day", self.hours)
        for field in (
            self.rate,
            self.ttft,
            self.itl,
            self.prompt_p90,
            self.output_p90,
            self.overhead,
            self.cache,
            self.hours,
        ):
            field.edited.connect(self.edited)
        self.percentile.currentIndexChanged.connect(self.edited)

    @staticmethod
    def _fitted_placeholder(engine_id: str) -> str:
        return f"{shipped_constants().request_overhead_for(engine_id) * 1000:g} (fitted)"

    def set_engine(self, engine_id: str) -> None:
        """Show the fitted per-request time of the engine that will serve (when none is typed)."""
        self.overhead.edit.setPlaceholderText(self._fitted_placeholder(engine_id))

    def set_spec(self, spec: ServingSpec | None, prompt_p90: int | None, output_p90: int | None) -> None:
        """Show a service's values (the defaults when there is none) without emitting ``edited``."""
        spec = spec or DEFAULT_SPEC
        widgets = (self.percentile,)
        for w in widgets:
            w.blockSignals(True)
        try:
            self.rate.set_value(spec.requests_per_s)
            self.ttft.set_value(spec.ttft_s)
            self.itl.set_value(spec.itl_ms)
            self.percentile.setCurrentIndex(max(0, self.percentile.findData(spec.percentile)))
            self.cache.set_value(round(spec.prefix_cache_hit_rate * 100, 4))
            self.hours.set_value(spec.hours_per_day)
            self.prompt_p90.set_value(prompt_p90)
            self.output_p90.set_value(output_p90)
            self.overhead.set_value(spec.request_overhead_ms)
        finally:
            for w in widgets:
                w.blockSignals(False)

    def spec(self) -> ServingSpec:
        """The service as the core takes it; raises ValueError naming the field for bad input."""
        values = {}
        for label, field in (
            ("Requests per second", self.rate),
            ("First token within", self.ttft),
            ("Between tokens", self.itl),
            ("Per-request time", self.overhead),
            ("Prefix cache hits", self.cache),
            ("Hours a day", self.hours),
        ):
            try:
                values[label] = field.value()
            except ValueError as exc:
                raise ValueError(f"{label}: {exc}") from None
        return ServingSpec(
            requests_per_s=float(values["Requests per second"] or 0.0),
            ttft_s=float(values["First token within"] or 0.0),
            itl_ms=float(values["Between tokens"] or 0.0),
            percentile=int(self.percentile.currentData()),
            prefix_cache_hit_rate=float(values["Prefix cache hits"] or 0.0) / 100.0,
            hours_per_day=float(values["Hours a day"] or 24.0),
            request_overhead_ms=values["Per-request time"],
        )

    def tails(self) -> tuple[int | None, int | None]:
        """(prompt p90, output p90) as typed (None when empty); raises ValueError naming the field."""
        out = []
        for label, field in (
            ("Prompt tokens, p90", self.prompt_p90),
            ("Output tokens, p90", self.output_p90),
        ):
            try:
                value = field.value()
            except ValueError as exc:
                raise ValueError(f"{label}: {exc}") from None
            out.append(None if value is None else int(value))
        return out[0], out[1]
