"""The catalog editor: the user's own GPUs, prices and model presets, stored safely.

One window with a tab per catalog (GPUs, model presets). Each tab is a table over the full
catalog rows as text (``column -> CSV text``, :mod:`gpuadvisor.core.formats.user_catalog`), with:

* editors suited to each column (numbers with their unit, prices in USD, dates with a calendar,
  choices), sorting and a search box;
* every cell checked with the core's row validation: an invalid cell is marked red and its
  tooltip names the column and the rule; modified cells are tinted and show the bundled value;
  prices older than the configured age are flagged;
* undo and redo for every change (one :class:`QUndoStack` for the whole editor, Ctrl+Z /
  Ctrl+Shift+Z), including imports, price-list updates, resets and backup restores;
* import (CSV or JSON, with a preview of what is added, updated and rejected, line by line),
  export (round-trips exactly), cloud price lists (gpuhunt, SkyPilot) with a preview, "reset to
  bundled" for one row or all, and restoring a backup of the user catalog.

Every change is saved at once (atomically, with a backup of the previous file) as overrides on
top of the bundled catalogs, and :attr:`CatalogEditor.catalogsChanged` hands the merged,
validated catalogs to the estimates, so charts follow edits live. Rows that fail validation
stay in the editor, marked, and are left out of the estimates with a warning.

The parts: :mod:`.columns` (labels, units, which editor a column gets), :mod:`.model` (the table
model), :mod:`.commands` (undo), :mod:`.delegates` (cell editors, sorting and filtering),
:mod:`.preview` (what an import would change) and :mod:`.editor` (the window and its tabs).
"""

from .columns import INVALID_BRUSH, STALE_BRUSH, column_label
from .delegates import NumberEditor
from .editor import CatalogEditor
from .preview import PreviewDialog, import_details

__all__ = [
    "INVALID_BRUSH",
    "STALE_BRUSH",
    "CatalogEditor",
    "NumberEditor",
    "PreviewDialog",
    "column_label",
    "import_details",
]
