"""The package model: which packages one build takes part in, and what each one is made of.

`model.py` holds the values (`Package`, `Selection`, `PackageGraph`); `graph.py` builds the graph
from the manifests (`locate.py` finds them, `loader.py` follows the dependency edges,
`features.py` unifies features); `sources.py` says which files a package compiles and in which
role, `targets.py` which targets it links, `program_result.py` what its build program declared.

Nothing here plans or runs an action: the planner, the program driver, host tools and
`mcpp metadata` all read this model, and it reads only the manifest and the conventions.
"""
