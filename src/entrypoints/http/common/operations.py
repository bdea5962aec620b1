"""Operations declared beside their handlers (:func:`operation`), registered by
:meth:`Operations.register` in the order the class declares them, under the face's tag and CORS
policy. What only the face's instance knows is a :class:`Late` value, called at registration."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

import attrs

from authgate.entrypoints.http.common import docs
from authgate.entrypoints.rest import Api, Cors, Param, pattern, query

F = TypeVar("F", bound=Callable[..., Any])

_DECLARED = "__declared_operations__"


@attrs.frozen
class Late:
    """A declaration's value that the face's instance gives at registration."""

    of: Callable[[Any], Any]


# The face's own CORS policy (its ``cors`` attribute): every operation's unless it says.
FACE_CORS = Late(lambda face: face.cors)


@attrs.frozen
class Declared:
    """One declared operation: :meth:`Api.operation`'s arguments, some :class:`Late`, and
    example ``refusals``."""

    method: str
    path: str
    refusals: Sequence[Exception] | Late
    options: dict[str, Any]

    def register(self, api: Api, face: Operations, handler: Callable[..., Any]) -> None:
        """Register this operation of ``face`` with ``handler``."""
        options = {k: v.of(face) if isinstance(v, Late) else v for k, v in self.options.items()}
        refusals = self.refusals.of(face) if isinstance(self.refusals, Late) else self.refusals
        if refusals:
            options["examples"] = docs.error_examples(*refusals)
        api.operation(self.method, self.path, tags=(face.tag,), **options)(handler)


def operation(
    method: str,
    path: str,
    *,
    refusals: Sequence[Exception] | Late = (),
    cors: Cors | Late | None = FACE_CORS,
    **options: Any,
) -> Callable[[F], F]:
    """Declare the decorated handler's operation (:meth:`Api.operation`'s keywords but
    ``tags`` and ``examples``); stacked ones register in the order written."""

    def declare(handler: F) -> F:
        declared = Declared(method, path, refusals, {"cors": cors, **options})
        vars(handler).setdefault(_DECLARED, []).insert(0, declared)
        return handler

    return declare


def flag(name: str, description: str) -> Param:
    """A query parameter that is ``true`` or ``false`` (absent: false)."""
    return query(
        name, pattern(r"^(true|false)$"), description=description, examples=["false", "true"]
    )


class Operations:
    """A face's operations: registers what its handlers declare, under its ``tag``."""

    tag: ClassVar[str]
    cors: Cors | None = None

    def register(self, api: Api) -> None:
        """Describe the face's tag and register its declared operations on ``api``."""
        docs.describe_tags(api, self.tag)
        for name, declared in _declarations(type(self)):
            for d in declared:
                d.register(api, self, getattr(self, name))


def _declarations(cls: type) -> Iterator[tuple[str, list[Declared]]]:
    """The declared handlers of ``cls`` and its bases, the bases' first, in definition order."""
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            declared = getattr(value, _DECLARED, None)
            if declared is not None and name not in seen:
                seen.add(name)
                yield name, declared
