"""The benchmark page's renderers: one module per part of docs/benchmarks.md. Each module's
render(R) returns the values its part of bench/report_template.md needs; a measure with a plot
also has PLOT (the file's name) and plot(R, plt), which returns a figure or None."""
