"""What the recommendation costs at the instance it names: the job (or a service's fleet for a month)
at the offer's on-demand and spot prices, one core function behind the CLI text, the JSON, the
window's detail panel and the PDF's recommendation, and no figure said twice when the cost above is
already at that instance's price."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path

import pytest

from gpuadvisor.core.estimation.cost import HOURS_PER_MONTH
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import load_scenario
from gpuadvisor.core.formatting import fmt_hours, fmt_usd, fmt_usd_per_hour
from gpuadvisor.core.presentation.detail import candidate_detail
from gpuadvisor.core.presentation.prices import rent_as, rented_costs
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.text import render_estimate
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
GPUS, MODELS = load_gpu_catalog(), load_model_catalog()
TODAY = dt.date(2026, 11, 29)


def _estimate(name: str, **budget):
    s = load_scenario(EXAMPLES / name)
    if budget:
        s = dataclasses.replace(s, budget=dataclasses.replace(s.budget, **budget))
    return estimate(s, GPUS, MODELS)


def _dollar_figures(text: str) -> list[str]:
    """Every dollar amount that is not a price per hour."""
    return re.findall(r"\$[\d,.]+M?(?!\d)(?!/h)(?! an hour)", text)


def test_the_job_at_the_named_instance_costs_its_hours_at_the_instance_price():
    est = _estimate("lora-llama-3.1-8b.json")
    rec = est.recommended
    assert rec is not None and rec.cost is not None and rec.cost.cost_usd is not None
    rented = rented_costs(est, rec)
    first = rented[0]
    hours = rec.cost.job_hours
    on_demand, spot = first.offer.usd_per_hour, first.offer.spot_usd_per_hour
    assert on_demand is not None and spot is not None
    assert first.usd is not None and first.spot_usd is not None and first.job_hours == hours
    for got, want in ((first.usd, on_demand), (first.spot_usd, spot)):
        assert (got.low, got.expected, got.high) == pytest.approx(
            (hours.low * want, hours.expected * want, hours.high * want)
        )
    # Priced from the catalog, the cost above is at another price: the sentence gives the job at the
    # instance's prices and says what the cost above is at, so the two figures can be reconciled.
    assert first.costed_at == ""
    sentence = rent_as(est)
    per_gpu = rec.cost.usd_per_hour / rec.gpu_count
    assert sentence == (
        f"Rent it as {first.offer.instances} \u00d7 {first.offer.instance_type} ({first.offer.provider}, "
        f"{first.offer.gpus_per_instance} GPUs each): {fmt_usd_per_hour(on_demand)}/h on demand (this "
        f"{fmt_hours(hours.expected)} job about {fmt_usd(first.usd.expected)}), "
        f"{fmt_usd_per_hour(spot)}/h spot (about {fmt_usd(first.spot_usd.expected)}); prices of "
        f"{first.offer.price_date}. The cost above is at the catalog's expected price, "
        f"{fmt_usd_per_hour(per_gpu)} per GPU-hour."
    )


@pytest.mark.parametrize(("price", "costed_at"), [("expected", "on demand"), ("low", "spot")])
def test_with_providers_the_cost_above_is_the_instances_and_no_figure_is_said_twice(price, costed_at):
    est = _estimate("lora-llama-3.1-8b.json", providers="any", price=price)
    rec = est.recommended
    assert rec is not None and rec.cost is not None and rec.cost.cost_usd is not None
    first = rented_costs(est, rec)[0]
    assert first.costed_at == costed_at
    at = first.usd if costed_at == "on demand" else first.spot_usd
    assert at is not None and at.expected == pytest.approx(rec.cost.cost_usd.expected)
    sentence = rent_as(est)
    assert f"/h {costed_at} (as costed above)" in sentence
    assert "The cost above is at" not in sentence  # it is at the instance named: nothing to reconcile
    # The cost the recommendation states is not stated again, nor any figure twice.
    assert fmt_usd(rec.cost.cost_usd.expected) not in sentence
    text = render_estimate(est)
    answer = text[text.index("Recommended:") :]
    assert len(_dollar_figures(answer)) == len(set(_dollar_figures(answer)))


def test_a_service_costs_its_replicas_a_month_at_the_instance_price():
    est = _estimate("serving-20-replicas.json")
    rec = est.recommended
    assert rec is not None and rec.serving is not None
    s = rec.serving
    first = rented_costs(est, rec)[0]
    assert first.per_month and first.replicas == s.replicas and first.job_hours is None
    assert first.offer.usd_per_hour is not None and first.usd is not None
    assert first.usd.expected == pytest.approx(s.replicas * first.offer.usd_per_hour * HOURS_PER_MONTH)
    lo, hi = s.replicas_range or (s.replicas, s.replicas)
    assert (first.usd.low, first.usd.high) == pytest.approx(
        (lo * first.offer.usd_per_hour * HOURS_PER_MONTH, hi * first.offer.usd_per_hour * HOURS_PER_MONTH)
    )
    sentence = rent_as(est)
    assert sentence.startswith(f"Rent each replica as {first.offer.instances} \u00d7 ")
    assert f"({s.replicas} replicas about {fmt_usd(first.usd.expected)} a month)" in sentence
    assert "The cost above is at the catalog's expected price" in sentence
    chosen = _estimate("serving-20-replicas.json", providers=("lambda", "aws"))
    rec = chosen.recommended
    assert rec is not None and rec.serving is not None
    lead = rented_costs(chosen, rec)[0]
    assert lead.costed_at == "on demand" and lead.usd is not None
    assert lead.usd.expected == pytest.approx(rec.serving.usd_per_month)
    assert "(as costed above)" in rent_as(chosen) and fmt_usd(rec.serving.usd_per_month) not in rent_as(
        chosen
    )


@pytest.mark.parametrize(
    ("name", "budget"),
    [
        ("lora-llama-3.1-8b.json", {}),
        ("lora-llama-3.1-8b.json", {"providers": "any"}),
        ("serving-20-replicas.json", {}),
    ],
)
def test_every_view_says_the_same_sentence(name, budget):
    """The CLI text, the JSON, the window's detail panel and the PDF's recommendation all come from
    rented_costs and rent_as; none works out a figure of its own."""
    est = _estimate(name, **budget)
    rec = est.recommended
    assert rec is not None
    sentence = rent_as(est)
    assert sentence in render_estimate(est).splitlines()
    assert sentence in [text for _tone, text in candidate_detail(est, rec.key, TODAY)]
    assert build_report(est, GPUS.meta, TODAY).rent_as == sentence
    data = estimate_to_dict(est, TODAY)
    row = next(c for c in data["candidates"] if c["gpu"] == rec.gpu.id and c["gpu_count"] == rec.gpu_count)
    assert row["instances"] == [r.to_dict() for r in rented_costs(est, rec)]
    key = "fleet_usd_per_month" if rec.serving is not None else "job_cost_usd"
    assert row["instances"][0][key]["expected"] > 0
