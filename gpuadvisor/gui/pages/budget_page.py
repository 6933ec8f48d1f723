"""Wizard page 3: money and time (cloud price, where to rent, limits, deadline or planning horizon,
buy-or-rent settings)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...core.errors import InputError
from ...core.formats.scenario import ANY_PROVIDER, DEFAULT_HORIZON_DAYS, Budget, Scenario
from ..widgets import ElidedComboBox, NumberField, hint

PRICES = [
    ("expected", "Expected (typical on-demand)"),
    ("low", "Low (cheapest marketplaces)"),
    ("high", "High (hyperscalers)"),
    ("own", "My own price per GPU-hour"),
]
#: Where to rent (``budget.providers``): the catalog's price range, or cloud instances.
RENT_FROM = [
    ("catalog", "The catalog's price per GPU"),
    (ANY_PROVIDER, "Cheapest instance, any provider"),
    ("chosen", "Cheapest instance of chosen providers"),
]


class BudgetPage(QWidget):
    """Budget inputs; ``apply`` writes them into a scenario."""

    edited = Signal()
    title = "Budget"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._filling = False
        self.price = ElidedComboBox()
        for value, label in PRICES:
            self.price.addItem(label, value)
        # Sized by the room it gets, not by its longest choice: the pages stay narrow on a laptop.
        self.price.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.price.setMinimumContentsLength(16)
        self.price.setToolTip(
            "Which cloud price to use. The catalog keeps a low, expected and high price per "
            "GPU-hour with its as-of date; prices change monthly, so use your own quote when "
            "you have one."
        )
        self.own_price = NumberField("2.50", key="budget.price")
        self.own_price.setToolTip("Your price in USD per GPU-hour (applied to every GPU).")
        self.max_per_hour = NumberField("no limit", optional=True, key="budget.max_usd_per_hour")
        self.max_per_hour.setToolTip("The most you will pay per hour for the whole setup (all its GPUs).")
        self.max_total = NumberField("no limit", optional=True, key="budget.max_total_usd")
        self.max_total.setToolTip("The most the whole job may cost.")
        self.deadline = NumberField("no deadline", optional=True, key="budget.deadline_hours")
        self.deadline.setToolTip(
            "Wall-clock hours the job may take. An underpowered card is cheaper per hour but "
            "can cost more per job and miss the deadline."
        )
        self.horizon = NumberField(f"{DEFAULT_HORIZON_DAYS:g}", key="budget.horizon_days")
        self.horizon.setToolTip(
            "Without a deadline, the answer is the cheapest setup that finishes within this many days: "
            "the cheapest setups of a long pre-training run take years, which is no plan anyone runs. "
            "A deadline replaces it."
        )
        self.rent_from = ElidedComboBox()
        for value, label in RENT_FROM:
            self.rent_from.addItem(label, value)
        self.rent_from.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.rent_from.setMinimumContentsLength(16)
        self.rent_from.setToolTip(
            "The catalog's price per GPU-hour, or the cheapest cloud instances that hold the setup's GPUs "
            "(whole instances: 3 GPUs on 4-GPU instances pay for 4), from the bundled snapshot of cloud "
            "price lists and the ones you import in the catalog editor."
        )
        self.providers = QListWidget()
        self.providers.setToolTip("The providers to rent from (tick one or more).")
        self.providers.setMaximumHeight(84)
        self.purchase = QComboBox()
        self.purchase.addItem("New", "new")
        self.purchase.addItem("Used", "used")
        self.purchase.setToolTip("Purchase price used for the buy-versus-rent comparison.")
        self.months = NumberField("36", key="budget.ownership_months")
        self.months.setToolTip("Months over which a bought GPU is written off (depreciation).")
        self.utilization = NumberField("60", key="budget.utilization", percent=True)
        self.utilization.setToolTip(
            "Percent of hours an owned GPU would be busy. Renting wins for sporadic "
            "work; buying can pay back for continuous use."
        )
        self.electricity = NumberField("0.15", key="budget.electricity_usd_per_kwh")
        self.electricity.setToolTip("Electricity price in USD per kWh.")
        self.pue = NumberField("1.3", key="budget.pue")
        self.pue.setToolTip("Power usage effectiveness: facility power over IT power (1.0-2.0).")

        rent = QFormLayout()
        rent.addRow("Cloud price", self.price)
        rent.addRow("Your price ($/GPU-h)", self.own_price)
        rent.addRow("Rent from", self.rent_from)
        rent.addRow("Providers", self.providers)
        rent.addRow("Max $ per hour", self.max_per_hour)
        rent.addRow("Max $ per job", self.max_total)
        rent.addRow("Deadline (hours)", self.deadline)
        rent.addRow("Horizon (days)", self.horizon)
        self.rent_form = rent
        rent_box = QGroupBox("Renting")
        rent_box.setLayout(rent)
        buy = QFormLayout()
        buy.addRow("Purchase", self.purchase)
        buy.addRow("Ownership (months)", self.months)
        buy.addRow("Utilization (%)", self.utilization)
        buy.addRow("Electricity ($/kWh)", self.electricity)
        buy.addRow("PUE", self.pue)
        buy_box = QGroupBox("Buying instead")
        buy_box.setLayout(buy)

        layout = QVBoxLayout(self)
        layout.addWidget(rent_box)
        layout.addWidget(buy_box)
        layout.addWidget(
            hint(
                "Try in the cloud before you buy: a few hours on a rented GPU tell you more than "
                "any spec sheet."
            )
        )
        layout.addStretch(1)

        self.price.currentIndexChanged.connect(self._on_input_changed)
        self.rent_from.currentIndexChanged.connect(self._on_input_changed)
        self.providers.itemChanged.connect(self._on_input_changed)
        self.purchase.currentIndexChanged.connect(self._on_input_changed)
        for f in self._fields():
            f.edited.connect(self._on_input_changed)

    def _fields(self) -> tuple[NumberField, ...]:
        return (
            self.own_price,
            self.max_per_hour,
            self.max_total,
            self.deadline,
            self.horizon,
            self.months,
            self.utilization,
            self.electricity,
            self.pue,
        )

    def set_scenario(self, scenario: Scenario) -> None:
        self._filling = True
        try:
            b = scenario.budget
            if isinstance(b.price, str):
                self.price.setCurrentIndex(max(0, self.price.findData(b.price)))
                self.own_price.set_value(None)
            else:
                self.price.setCurrentIndex(self.price.findData("own"))
                self.own_price.set_value(b.price)
            self.max_per_hour.set_value(b.max_usd_per_hour)
            self.max_total.set_value(b.max_total_usd)
            self.deadline.set_value(b.deadline_hours)
            self.horizon.set_value(b.horizon_days)
            if b.providers is None or b.providers == ANY_PROVIDER:
                choice = "catalog" if b.providers is None else ANY_PROVIDER
                chosen: tuple[str, ...] = ()
            else:
                choice, chosen = "chosen", tuple(b.providers)
            self.rent_from.setCurrentIndex(max(0, self.rent_from.findData(choice)))
            if chosen:
                self._check_providers(chosen)
            self.purchase.setCurrentIndex(max(0, self.purchase.findData(b.purchase)))
            self.months.set_value(b.ownership_months)
            self.utilization.set_value(round(b.utilization * 100, 2))
            self.electricity.set_value(b.electricity_usd_per_kwh)
            self.pue.set_value(b.pue)
        finally:
            self._filling = False
        self._show_rows()

    def _show_rows(self) -> None:
        self.rent_form.setRowVisible(self.own_price, self.price.currentData() == "own")
        self.rent_form.setRowVisible(self.rent_from, self.price.currentData() != "own")
        self.rent_form.setRowVisible(
            self.providers, self.price.currentData() != "own" and self.rent_from.currentData() == "chosen"
        )

    def set_providers(self, names: Iterable[str]) -> None:
        """The providers of the instance snapshot (their ticks are kept)."""
        ticked = self.chosen_providers()
        self._filling = True
        try:
            self.providers.clear()
            for name in names:
                item = QListWidgetItem(name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if name in ticked else Qt.CheckState.Unchecked)
                self.providers.addItem(item)
        finally:
            self._filling = False

    def _check_providers(self, names: tuple[str, ...]) -> None:
        present = [self.providers.item(i).text() for i in range(self.providers.count())]
        for name in names:  # a scenario may name a provider the snapshot no longer has: shown ticked
            if name not in present:
                item = QListWidgetItem(name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                self.providers.addItem(item)
        for i in range(self.providers.count()):
            item = self.providers.item(i)
            item.setCheckState(Qt.CheckState.Checked if item.text() in names else Qt.CheckState.Unchecked)

    def chosen_providers(self) -> tuple[str, ...]:
        return tuple(
            self.providers.item(i).text()
            for i in range(self.providers.count())
            if self.providers.item(i).checkState() == Qt.CheckState.Checked
        )

    def _on_input_changed(self, *_args: object) -> None:
        if self._filling:
            return
        self._show_rows()
        self.edited.emit()

    def apply(self, scenario: Scenario) -> Scenario:
        """The scenario with this page's budget; InputError naming the field for bad input."""

        def read(field: NumberField, name: str) -> float | None:
            try:
                return field.value()
            except ValueError as exc:
                field.show_error(str(exc))
                raise InputError(f"budget.{name}", str(exc)) from None

        def required(field: NumberField, name: str) -> float:
            value = read(field, name)
            if value is None:  # only an optional field reads as empty
                raise InputError(f"budget.{name}", "enter a number")
            return value

        price_choice = self.price.currentData()
        price = required(self.own_price, "price") if price_choice == "own" else price_choice
        rent_from = self.rent_from.currentData()
        providers: str | tuple[str, ...] | None = None
        if rent_from == ANY_PROVIDER:
            providers = ANY_PROVIDER
        elif rent_from == "chosen":
            providers = self.chosen_providers()
            if not providers:
                raise InputError("budget.providers", "tick at least one provider to rent from")
        budget = Budget(
            max_usd_per_hour=read(self.max_per_hour, "max_usd_per_hour"),
            max_total_usd=read(self.max_total, "max_total_usd"),
            deadline_hours=read(self.deadline, "deadline_hours"),
            price=price,
            purchase=self.purchase.currentData(),
            ownership_months=required(self.months, "ownership_months"),
            utilization=required(self.utilization, "utilization") / 100.0,
            electricity_usd_per_kwh=required(self.electricity, "electricity_usd_per_kwh"),
            pue=required(self.pue, "pue"),
            horizon_days=read(self.horizon, "horizon_days") or DEFAULT_HORIZON_DAYS,
            providers=providers,
        )
        return replace(scenario, budget=budget)
