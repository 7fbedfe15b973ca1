"""Choosing a prebuilt artifact by tag and accel, and the refusal when none fits."""
from __future__ import annotations

from pathlib import Path

import pytest

from mcpp.engine.core.accel import parse_accel
from mcpp.engine.core.errors import McppError
from mcpp.engine.manifest.model import RuntimeArtifact
from mcpp.engine.build.prebuilt import accel_differences, arch_covered, select, tag_accepts

GOLDEN = Path(__file__).parent / "golden"
TAG = "x86_64-linux-gnu-gcc16-libstdcxx16-c++23"


def entry(text):
    return parse_accel(text).entries[0]


@pytest.mark.parametrize("want, have, covered", [
    ("sm_89", "cuda12.8+{sm_89}", True),                 # listed
    ("sm_86", "cuda12.8+{sm_80,sm_90f}", False),
    ("sm_92", "cuda12.8+{sm_90f}", True),                # a family target, same major, lower minor
    ("sm_90", "cuda12.8+{sm_90f}", True),
    ("sm_89", "cuda12.8+{sm_90f}", False),               # another major
    ("sm_100", "cuda12.8+{sm_90f}", False),
    ("sm_100", "cuda12.8+{sm_80} ptx>=90", True),        # the portable-form floor is below it
    ("sm_86", "cuda12.8+{sm_80} ptx>=90", False),
    ("gfx942", "hip6.4+{gfx942}", True),                 # no number to order by: equality
    ("gfx950", "hip6.4+{gfx942}", False),
    ("gfx950", "hip6.4+{gfx942} floor>=1", False),
])
def test_architecture_coverage(want, have, covered):
    assert arch_covered(want, entry(have)) is covered


def test_every_requested_backend_must_be_declared_with_the_same_major():
    published = parse_accel("cuda12.8+{sm_90f}")
    assert accel_differences(parse_accel("cuda12.2+{sm_90}"), published)
    assert not accel_differences(parse_accel("cuda13.0+{sm_90}"), published)
    assert not accel_differences(parse_accel("cuda12.8+{sm_90}, vulkan1.2"), published)
    assert accel_differences(parse_accel("vulkan1.2"), parse_accel("vulkan1.3+{spirv1.6}, cuda12.8"))


def test_no_accel_means_no_device_code_and_no_constraint():
    assert accel_differences(parse_accel("cuda12.8+{sm_86}"), None)


def test_tags_accept_their_extensions_at_a_dash():
    assert tag_accepts("x86_64-linux-gnu", TAG)
    assert tag_accepts(TAG, TAG)
    assert not tag_accepts("x86_64-linux", "x86_64-linuxabi-gcc16")
    assert not tag_accepts("aarch64-linux-gnu", TAG)


CPU = RuntimeArtifact(role="static-library", path="lib/a.a", abi="x86_64-linux-gnu")
GPU = RuntimeArtifact(role="static-library", path="lib/b.a", abi="x86_64-linux-gnu",
                      accel=parse_accel("cuda12.8+{sm_90f}"))


@pytest.mark.parametrize("order", [(CPU, GPU), (GPU, CPU)])
def test_an_accel_build_takes_the_first_device_artifact_that_satisfies_it(order):
    assert select("p@1", order, TAG, parse_accel("cuda12.8+{sm_90}")).artifact is GPU


@pytest.mark.parametrize("order", [(CPU, GPU), (GPU, CPU)])
def test_a_build_without_accelerators_takes_the_first_artifact_without_device_code(order):
    assert select("p@1", order, TAG, parse_accel("")).artifact is CPU


def test_an_accel_build_no_device_artifact_satisfies_is_refused_even_with_a_cpu_one():
    with pytest.raises(McppError) as e:
        select("p@1", (CPU, GPU), TAG, parse_accel("cuda12.8+{sm_86}"))
    notes = "\n".join(e.value.notes)
    assert "accel needs cuda12.8+{sm_90f}, this build has cuda12.8+{sm_86}" in notes
    assert "(--no-accel)" in notes


def test_only_device_artifacts_and_no_accelerator_is_refused_naming_accel():
    with pytest.raises(McppError) as e:
        select("p@1", (GPU,), TAG, parse_accel(""))
    notes = "\n".join(e.value.notes)
    assert "carries device code" in notes and "(--accel)" in notes and "--no-accel" not in notes


def test_a_pure_cpu_package_serves_every_build_with_its_first_artifact():
    other = RuntimeArtifact(role="static-library", path="lib/c.a", abi="x86_64-linux-gnu")
    for accel in ("", "cuda12.8+{sm_86}", "vulkan1.2"):
        assert select("p@1", (CPU, other), TAG, parse_accel(accel)).artifact is CPU
    assert select("p@1", (), TAG, parse_accel("")) is None


def test_the_refusal_names_the_dimension_and_both_sides():
    gpu = RuntimeArtifact(role="static-library", path="lib/libgpukit.a", provenance="mcpp-pack/1",
                          abi="x86_64-linux-gnu", accel=parse_accel("cuda12.8+{sm_90f}"))
    with pytest.raises(McppError) as e:
        select("mcpplibs.gpuonly@0.1.0", (gpu,), TAG, parse_accel("cuda12.8+{sm_86}"))
    assert e.value.render() + "\n" == (GOLDEN / "prebuilt_refusal.txt").read_text()


def test_the_closest_artifact_is_the_one_with_fewest_differences():
    other = RuntimeArtifact(abi="aarch64-linux-gnu", accel=parse_accel("cuda12.8+{sm_80}"))
    near = RuntimeArtifact(abi="x86_64-linux-gnu", accel=parse_accel("cuda12.8+{sm_90f}"))
    with pytest.raises(McppError) as e:
        select("p@1", (other, near), TAG, parse_accel("cuda12.8+{sm_86}"))
    notes = "\n".join(e.value.notes)
    assert "closest is x86_64-linux-gnu, and it differs on:\n    accel needs cuda12.8+{sm_90f}" in notes


def test_pack_records_the_toolkit_a_rule_stated_as_the_measured_version():
    from mcpp.engine.publish.pack import measured_accel
    build = parse_accel("cuda12.9+{sm_89} ptx>=89, vulkan1.2")
    assert measured_accel(build, {"cuda": "13.0"}) == "cuda13.0+{sm_89} ptx>=89, vulkan1.2"
    assert measured_accel(build, {}) == "cuda12.9+{sm_89} ptx>=89, vulkan1.2"
