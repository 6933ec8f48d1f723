"""A scenario's title: the user's name for it, else one built from the model and the workload.

The window's name field, the CLI's first line, ``estimate --json`` ("scenario") and the PDF's title
all use :func:`scenario_title`, so a scenario switched from LoRA on an 8B model to inference with a
70B one is titled after what it now is, unless the user named it.
"""

from __future__ import annotations

from ..estimation.results import Estimate

#: How a scenario without a name of its own is titled, by workload kind ({model}: the model's name).
TITLE_WORDS = {
    "inference": "Inference with {model}",
    "lora": "LoRA fine-tune of {model}",
    "qlora": "QLoRA fine-tune of {model}",
    "full_finetune": "Full fine-tune of {model}",
    "pretrain": "Pre-training {model}",
}
#: Names that are no name of the user's (the format's old default).
UNNAMED = ("", "Untitled scenario")


def default_title(est: Estimate) -> str:
    """The name built from the model and the workload: ``LoRA fine-tune of Llama 3.1 8B``,
    ``Serving Llama 3.1 70B``."""
    w, model = est.scenario.workload, est.model.name or "a custom model"
    if w.serving is not None:
        return f"Serving {model}"
    return TITLE_WORDS.get(w.kind, "{model}").format(model=model)


def scenario_title(est: Estimate) -> str:
    """The scenario's title everywhere it is shown: the user's name, else :func:`default_title`."""
    name = est.scenario.name.strip()
    return name if name not in UNNAMED else default_title(est)
