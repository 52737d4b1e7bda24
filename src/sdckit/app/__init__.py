"""The workbench: ``sdckit app``, a local web application over the library (issue 31).

A protector who does not write Python or TOML opens a file, marks the columns' roles, sees the
risk, protects it step by step, builds and protects tables from it, and writes the release with its recipe, in a browser; every figure comes from the same library calls as the command line
(DESIGN.md section 11). :class:`~sdckit.app.server.Workbench` is the server;
:mod:`sdckit.app.session` the state and the Open, Roles and Risk calls; :mod:`sdckit.app.protect`,
:mod:`sdckit.app.tables` and :mod:`sdckit.app.release` the other screens' calls; :mod:`sdckit.app.jobs`
long work off the request thread; :mod:`sdckit.app.views` the screens. Templates and assets live in the package: it works offline.
"""
