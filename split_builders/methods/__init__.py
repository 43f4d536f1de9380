"""The built-in split methods, one module each, named as its registry name.

This table is the one place that lists them (``resplit list`` shows them in this order); a method
module itself never registers. A method of your own: subclass :class:`split_builders.api.SplitMethod`
and pass it to :func:`split_builders.api.register`.
"""

BUILTIN = {
    "likelihood": ("split_builders.methods.likelihood", "LikelihoodMethod"),
    "tmcd": ("split_builders.methods.tmcd", "TMCDMethod"),
    "pvi": ("split_builders.methods.pvi", "PVIMethod"),
    "curriculum": ("split_builders.methods.curriculum", "CurriculumMethod"),
    "behavioural": ("split_builders.methods.behavioural", "BehaviouralMethod"),
    "mcd": ("split_builders.methods.mcd", "MCDMethod"),
}
