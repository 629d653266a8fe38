"""`llm-adapt run`: what the user asked (config), what the run has so far (state), the file names of a
run directory (layout), one function per stage (stages) and the loop that runs them (pipeline)."""
