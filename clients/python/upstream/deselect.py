"""Leaves out the upstream cases a switch plugin names as not applicable (each with its reason),
reported as deselected."""


def deselect(config, items, not_applicable: dict) -> None:
    kept = [item for item in items if item.originalname not in not_applicable]
    left_out = [item for item in items if item.originalname in not_applicable]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
