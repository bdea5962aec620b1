"""The composition root, by face: the only code that knows every concrete adapter.

:mod:`~authgate.entrypoints.app.build` tells the whole story (open the stores and the shared
parts, build each face, mount it, start the workers); each face has its module
(:mod:`~authgate.entrypoints.app.signin` with the account and sessions,
:mod:`~authgate.entrypoints.app.provider_events`, :mod:`~authgate.entrypoints.app.openid`,
:mod:`~authgate.entrypoints.app.passkeys`), beside the stores
(:mod:`~authgate.entrypoints.app.stores`), the parts every face shares
(:mod:`~authgate.entrypoints.app.shared`) and the configuration
(:mod:`~authgate.entrypoints.app.config`), which nothing outside this package reads but the
command line. A face whose configuration is absent is not imported.
"""
