"""The run viewer: every simulation of one or more runs, their conversations and judge labels.

``build`` reads run directories (through each run's benchmark plug-in, which says how its
simulations are shown: ``localbench.viewdata``) and writes a static page with one data file per
simulation; ``static/`` is the page itself. `localbench view RUN [RUN ...]` writes and opens it;
the report stage writes RUN/view/ too, so the report's table cells can link to their simulations.
"""
