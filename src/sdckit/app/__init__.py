"""The workbench: ``sdckit app``, a local web application over the library (issue 31).

A protector who does not write Python or TOML opens a file, marks the columns' roles, sees the
risk, protects it step by step and writes the release with its recipe, in a browser; every figure comes from the same library calls as the command line
(DESIGN.md section 11). :class:`~sdckit.app.server.Workbench` is the server;
:mod:`sdckit.app.session` the state and library calls of each screen; :mod:`sdckit.app.jobs`
long work off the request thread; :mod:`sdckit.app.views` the screens. Templates and assets live in the package: it works offline.
"""
