"""The compiler's side of running it again (replay, repro, reduce, bisect, regress): IR loaded back
from TVM's JSON, passes rebuilt, the reproducer's template, reduce's IR edits, the fork server,
configs forced on every compile, and what a regress side's interpreter has."""
