from mcpp.sandbox import EXECROOT_PLACEHOLDER, prefix_map_flags
from mcpp.sandbox.placeholder import expand_argv, expand_env


def test_placeholder_is_replaced_inside_arguments_and_env_values():
    argv = ["gcc", f"-ffile-prefix-map={EXECROOT_PLACEHOLDER}=.", f"-I{EXECROOT_PLACEHOLDER}/inc", "-c"]
    assert expand_argv(argv, "/execroot") == ["gcc", "-ffile-prefix-map=/execroot=.", "-I/execroot/inc", "-c"]
    assert expand_env({"A": f"{EXECROOT_PLACEHOLDER}/x", "B": "y"}, "/r") == {"A": "/r/x", "B": "y"}


def test_prefix_map_flags():
    assert prefix_map_flags("/w/sandbox/1-2") == [
        "-ffile-prefix-map=/w/sandbox/1-2=.",
        "-fno-canonical-system-headers",
    ]
    assert prefix_map_flags() == [f"-ffile-prefix-map={EXECROOT_PLACEHOLDER}=.", "-fno-canonical-system-headers"]
    assert prefix_map_flags("/d", gcc=False) == ["-ffile-prefix-map=/d=."]
