"""The estimate itself: memory, speed, cost, advice and calibration against measurements."""
