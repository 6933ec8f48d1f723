"""The Qt desktop interface: main window, wizard pages, charts and report export."""
