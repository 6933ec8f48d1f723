"""gpuadvisor: will my model fit, how fast will it run, and what will it cost, across a GPU catalog."""

__version__ = "0.2.0"
