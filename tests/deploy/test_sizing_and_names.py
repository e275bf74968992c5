"""deploy.sizing and deploy.names: the formulas and the name rules."""

from __future__ import annotations

import re

from deploy import names
from deploy.sizing import GB, size_for


def test_sizing_formula_and_clamps() -> None:
    sized = size_for(31 * GB, "ml.m5.4xlarge")
    assert (sized.download_seconds, sized.startup_seconds, sized.volume_gb) == (920, 910, 82)
    tiny = size_for(1000, "ml.m5.4xlarge")
    assert (tiny.download_seconds, tiny.startup_seconds, tiny.volume_gb) == (301, 601, 21)
    huge = size_for(400 * GB, "ml.m5.4xlarge")
    assert (huge.download_seconds, huge.startup_seconds, huge.volume_gb) == (3600, 3600, 512)


def test_no_volume_size_on_instance_storage() -> None:
    for instance_type in ("ml.g7e.2xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge", "ml.p4d.24xlarge"):
        assert size_for(GB, instance_type).volume_gb is None


def test_versioned_names_fit_and_match() -> None:
    pattern = names.name_pattern("ModelName")
    for endpoint in ("qwen-peagle", "q" * 63, "a" * 47 + "-" + "b" * 15):
        versioned = names.versioned_name(endpoint, "20250601120000")
        assert len(versioned) <= 63 and re.fullmatch(pattern, versioned), versioned
        assert names.is_versioned_name(endpoint, versioned)
        component = names.component_name(endpoint)
        assert len(component) <= 63 and re.fullmatch(pattern, component)
    assert not names.is_versioned_name("qwen-peagle", "qwen-peagle-2-20250601120000")
    assert not names.is_versioned_name("qwen-peagle", "qwen-peagle-ic")
