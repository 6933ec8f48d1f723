"""The user's files: folders, settings, the log, and safe writes. No Qt here, ever.

Folders come from :func:`user_paths` (platformdirs, or ``GPUADVISOR_HOME`` for tests and a
portable install) and are created only when something is written. Every write is atomic
(:func:`atomic_write_text`), damaged files are set aside rather than deleted, and every failure
is a :class:`StorageError` whose text can be shown to the user as it is.

Typical start-up in the GUI::

    log_file = configure_logging()            # Path, or None when only stderr is available
    settings, warnings = load_settings()      # never raises; show the warnings once
    ...
    settings = add_recent_file(settings, scenario_path)
    save_settings(settings)                   # raises StorageError with a readable message

    gpus, models, warnings = load_effective_catalogs()   # bundled + the user's edits; never fails
    runs = load_measurements().value          # measured runs; calibration: load_calibration().value
    loaded = load_user_catalog()              # the edits themselves, for the catalog editor
    save_user_catalog(loaded.catalog.with_edits("gpus", edits))   # atomic, previous kept as .bak
"""

from .atomic import atomic_write_bytes, atomic_write_text, backup_path, set_aside
from .errors import StorageError
from .logs import LOG_FILENAME, configure_logging, current_log_file, log_exception, shutdown_logging
from .measurements_store import (
    CALIBRATION_FILENAME,
    MEASUREMENTS_FILENAME,
    Loaded,
    add_measurement,
    calibration_file,
    export_calibration,
    import_calibration,
    load_calibration,
    load_measurements,
    measurements_file,
    merge_measurements,
    read_profile,
    save_calibration,
    save_measurements,
)
from .paths import HOME_ENV, UserPaths, ensure_dir, user_paths
from .settings import (
    MAX_RECENT_FILES,
    PAGE_SIZES,
    SETTINGS_FILENAME,
    Settings,
    add_recent_file,
    decode_blob,
    encode_blob,
    existing_recent_files,
    load_settings,
    remove_recent_file,
    save_settings,
    settings_file,
)
from .user_catalog_store import (
    USER_CATALOG_FILENAME,
    UserCatalogLoad,
    load_catalogs,
    load_effective_catalogs,
    load_user_catalog,
    restore_user_catalog,
    save_user_catalog,
    user_catalog_backups,
    user_catalog_file,
)

__all__ = [
    "CALIBRATION_FILENAME",
    "HOME_ENV",
    "LOG_FILENAME",
    "MAX_RECENT_FILES",
    "MEASUREMENTS_FILENAME",
    "PAGE_SIZES",
    "SETTINGS_FILENAME",
    "Loaded",
    "Settings",
    "StorageError",
    "USER_CATALOG_FILENAME",
    "UserCatalogLoad",
    "UserPaths",
    "add_measurement",
    "calibration_file",
    "export_calibration",
    "import_calibration",
    "load_calibration",
    "load_measurements",
    "measurements_file",
    "merge_measurements",
    "read_profile",
    "save_calibration",
    "save_measurements",
    "add_recent_file",
    "atomic_write_bytes",
    "atomic_write_text",
    "backup_path",
    "configure_logging",
    "current_log_file",
    "decode_blob",
    "encode_blob",
    "ensure_dir",
    "existing_recent_files",
    "load_catalogs",
    "load_effective_catalogs",
    "load_settings",
    "load_user_catalog",
    "log_exception",
    "remove_recent_file",
    "restore_user_catalog",
    "save_settings",
    "save_user_catalog",
    "set_aside",
    "settings_file",
    "shutdown_logging",
    "user_catalog_backups",
    "user_catalog_file",
    "user_paths",
]
