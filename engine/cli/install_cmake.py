"""The CMake package files `mcpp install` writes: `lib/cmake/<name>/<name>-config.cmake` and
`<name>-config-version.cmake`, so a CMake project's `find_package(<name>)` finds an installed
package and links its libraries as imported targets (`<name>::<library>`).

The config file names every path relative to its own directory, so the prefix can move (as the
relative library links and the `.pc` file's `${prefix}` allow too). Each library is an
`IMPORTED` target carrying what a consumer needs: the include directory, the defines the
package's headers are compiled with, and the libraries a static link needs after it (the
archives of its library dependencies, its system libraries, `-l` flags). A package's C++20
module interfaces are installed beside the config (`modules/`) and listed in
`<name>_MODULE_INTERFACES`, for a consumer that builds them for its own compiler and standard.
"""
from __future__ import annotations

from typing import Sequence

# The CMake versions whose `find_package` these files are written for: the policies they set.
_MIN_VERSION = "3.5"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _list(items: Sequence[str]) -> str:
    """A CMake list (`a;b`) of literal items: `;` inside one is escaped."""
    return ";".join(i.replace(";", "\\;") for i in items)


def config_text(name: str, libraries: Sequence[tuple[str, str, str]], defines: Sequence[str],
                link_libraries: Sequence[str], modules: Sequence[str]) -> str:
    """`<name>-config.cmake`. `libraries`: (target name, `STATIC` or `SHARED`, path below the
    prefix) of each installed library; `link_libraries`: what a static link adds after them
    (paths below the prefix for installed archives, `-l`/`-pthread` flags otherwise);
    `modules`: module interface files below the prefix."""
    lines = [
        f"# {name}-config.cmake: written by `mcpp install`; find_package({name}) reads it.",
        f"cmake_minimum_required(VERSION {_MIN_VERSION})",
        'get_filename_component(_mcpp_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)',
    ]
    interface_links = [f"${{_mcpp_prefix}}/{p}" if not p.startswith("-") else p for p in link_libraries]
    for target, kind, path in libraries:
        full = f"{name}::{target}"
        lines += [
            f"if(NOT TARGET {full})",
            f"  add_library({full} {kind} IMPORTED)",
            f"  set_target_properties({full} PROPERTIES",
            f'    IMPORTED_LOCATION "${{_mcpp_prefix}}/{path}"',
            '    INTERFACE_INCLUDE_DIRECTORIES "${_mcpp_prefix}/include"',
        ]
        if defines:
            lines.append(f"    INTERFACE_COMPILE_DEFINITIONS {_quoted(_list(defines))}")
        if interface_links and kind == "STATIC":
            lines.append(f'    INTERFACE_LINK_LIBRARIES "{_list(interface_links)}"')
        lines += ["  )", "endif()"]
    if not libraries:  # headers only: an interface target with the include directory
        lines += [
            f"if(NOT TARGET {name}::{name})",
            f"  add_library({name}::{name} INTERFACE IMPORTED)",
            f"  set_target_properties({name}::{name} PROPERTIES",
            '    INTERFACE_INCLUDE_DIRECTORIES "${_mcpp_prefix}/include"',
        ]
        if defines:
            lines.append(f"    INTERFACE_COMPILE_DEFINITIONS {_quoted(_list(defines))}")
        lines += ["  )", "endif()"]
    shown = " ".join(f'"${{_mcpp_prefix}}/{m}"' for m in modules)
    lines += [
        f"set({name}_MODULE_INTERFACES {shown})" if modules else f"set({name}_MODULE_INTERFACES)",
        f'set({name}_INCLUDE_DIRS "${{_mcpp_prefix}}/include")',
        f"set({name}_FOUND TRUE)",
        "unset(_mcpp_prefix)",
        "",
    ]
    return "\n".join(lines)


def version_text(version: str) -> str:
    """`<name>-config-version.cmake`: compatible with a request of the same major version
    (before 1.0, the same minor too) that is not newer; exact when equal."""
    return "\n".join([
        "# written by `mcpp install`: which find_package(<name> VERSION) requests this package meets",
        f'set(PACKAGE_VERSION "{version}")',
        'string(REGEX MATCH "^[0-9]+" _mcpp_major "${PACKAGE_VERSION}")',
        'string(REGEX MATCH "^[0-9]+\\\\.[0-9]+" _mcpp_minor "${PACKAGE_VERSION}")',
        "if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)",
        "  set(PACKAGE_VERSION_COMPATIBLE FALSE)",
        'elseif(_mcpp_major STREQUAL "0" AND NOT PACKAGE_FIND_VERSION MATCHES "^${_mcpp_minor}(\\\\.|$)")',
        "  set(PACKAGE_VERSION_COMPATIBLE FALSE)",
        'elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _mcpp_major)',
        "  set(PACKAGE_VERSION_COMPATIBLE FALSE)",
        "else()",
        "  set(PACKAGE_VERSION_COMPATIBLE TRUE)",
        "  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)",
        "    set(PACKAGE_VERSION_EXACT TRUE)",
        "  endif()",
        "endif()",
        "unset(_mcpp_major)",
        "unset(_mcpp_minor)",
        "",
    ])
