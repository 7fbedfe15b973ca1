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

import os
from typing import Sequence

# The policies the files are written under, pushed and popped so the caller's stay as they are
# (a config file never calls cmake_minimum_required, which would change the caller's).
_POLICY_VERSION = "3.5...3.31"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _list(items: Sequence[str]) -> str:
    """A CMake list (`a;b`) of literal items: `;` inside one is escaped."""
    return ";".join(i.replace(";", "\\;") for i in items)


def config_text(name: str, libraries: Sequence[tuple[str, str, str]], defines: Sequence[str],
                link_libraries: Sequence[str], modules: Sequence[tuple[str, str]], standard: str,
                has_headers: bool) -> str:
    """`<name>-config.cmake`. `libraries`: (target name, `STATIC` or `SHARED`, path below the
    prefix) of each installed library; `link_libraries`: what a static link adds after them
    (paths below the prefix for installed archives, `-l`/`-pthread` flags otherwise);
    `modules`: (module name, interface file below the prefix), imported (CMake 3.28+) as the
    target's C++ modules, which a consumer's CMake builds for its own compiler; `standard`: the
    package's (`c++23`), what the module interfaces need; `has_headers`: `include/` was installed."""
    lines = [
        f"# {name}-config.cmake: written by `mcpp install`; find_package({name}) reads it.",
        "cmake_policy(PUSH)",
        f"cmake_policy(VERSION {_POLICY_VERSION})",
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
        ]
        if has_headers:
            lines.append('    INTERFACE_INCLUDE_DIRECTORIES "${_mcpp_prefix}/include"')
        if defines:
            lines.append(f"    INTERFACE_COMPILE_DEFINITIONS {_quoted(_list(defines))}")
        if interface_links and kind == "STATIC":
            lines.append(f'    INTERFACE_LINK_LIBRARIES "{_list(interface_links)}"')
        lines += ["  )"]
        if modules and kind == "STATIC":
            lines.append(f'  set(_mcpp_location "{path}")')
            lines += _module_properties(full, modules, standard)
            lines.append("  unset(_mcpp_location)")
        lines.append("endif()")
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
    shown = " ".join(f'"${{_mcpp_prefix}}/{m}"' for _, m in modules)
    lines += [
        f"set({name}_MODULE_INTERFACES {shown})" if modules else f"set({name}_MODULE_INTERFACES)",
        f'set({name}_INCLUDE_DIRS "${{_mcpp_prefix}}/include")',
        f"set({name}_FOUND TRUE)",
        "unset(_mcpp_prefix)",
        "cmake_policy(POP)",
        "",
    ]
    return "\n".join(lines)


def _module_properties(target: str, modules: Sequence[tuple[str, str]], standard: str) -> list[str]:
    """What CMake 3.28+ reads to build an imported target's module interfaces for the consumer,
    as its own `install(EXPORT ... CXX_MODULES_DIRECTORY)` writes it: the interfaces as an
    `INTERFACE` file set of type `CXX_MODULES`, and each module's name and interface for the
    configuration the target is imported as. Older versions leave the modules out."""
    number = standard.split("++")[-1]
    entries = ";".join(f"{n}=${{_mcpp_prefix}}/{m}" for n, m in modules)
    base = sorted({os.path.dirname(m) for _, m in modules})
    files = " ".join(f'"${{_mcpp_prefix}}/{m}"' for _, m in modules)
    return [
        '  if(NOT CMAKE_VERSION VERSION_LESS "3.28")',
        f"    set_property(TARGET {target} APPEND PROPERTY IMPORTED_CONFIGURATIONS NOCONFIG)",
        f"    set_target_properties({target} PROPERTIES",
        '      IMPORTED_LOCATION_NOCONFIG "${_mcpp_prefix}/' + "${_mcpp_location}" + '"',
        f'      IMPORTED_CXX_MODULES_COMPILE_FEATURES "cxx_std_{number}"',
        f'      IMPORTED_CXX_MODULES_NOCONFIG "{entries}"',
        f'      INTERFACE_COMPILE_FEATURES "cxx_std_{number}"',
        "    )",
        f"    target_sources({target} INTERFACE FILE_SET mcpp_modules TYPE CXX_MODULES",
        "      BASE_DIRS " + " ".join(f'"${{_mcpp_prefix}}/{b}"' for b in base),
        f"      FILES {files})",
        "  endif()",
    ]


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
