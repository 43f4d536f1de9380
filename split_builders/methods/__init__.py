"""The built-in split methods, one module each.

This table is the one place that lists them (``resplit list`` shows them in this order): each name (the registry
key and CLI subcommand, which need not be the module's name) maps to a lazy ``"module:Class"`` reference that
:mod:`split_builders.registry` imports on first use; a method module itself never registers. A method of your own:
subclass :class:`split_builders.api.SplitMethod` and pass it to :func:`split_builders.api.register`, or declare it
as an entry point of your package (group ``resplit.methods``).
"""

BUILTIN = {
    "likelihood": "split_builders.methods.likelihood:LikelihoodMethod",
    "tmcd": "split_builders.methods.tmcd:TMCDMethod",
    "pvi": "split_builders.methods.pvi:PVIMethod",
    "curriculum": "split_builders.methods.curriculum:CurriculumMethod",
    "behavioural": "split_builders.methods.behavioural:BehaviouralMethod",
    "mcd": "split_builders.methods.mcd:MCDMethod",
    "lexical-overlap": "split_builders.methods.lexical_overlap:LexicalOverlapMethod",
}
