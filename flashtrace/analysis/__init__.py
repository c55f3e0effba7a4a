"""Analysis floor (torch-free): the `Trace` record (`schema`), its limits and choices (`limits`), prompt
and response segments, the hop graph, hop-depth comparison, and the analysis of one trace that every
view reads. May import the engine's torch-free `inputs` only."""
