"""The ranking table's former import path; the ranking now lives in :mod:`gpuadvisor.gui.ranking`."""

from .ranking import ROLE_KEY, ROLE_SORT, RankingModel, RankingProxy, RankingTable, RankingView

__all__ = ["ROLE_KEY", "ROLE_SORT", "RankingModel", "RankingProxy", "RankingTable", "RankingView"]
