"""The law kit's messages that more than one of its checks gives."""

from __future__ import annotations

from prelens.errors import LawError


def law_raised(law: str, where: str, exc: BaseException) -> LawError:
    return LawError(f"law '{law}' fails: {where} raised {type(exc).__name__}: {exc}")


def pure_mutated(fn: str, lens: str, which: str, what: str, path: str) -> LawError:
    """``fwd`` or ``bwd`` wrote into an argument: ``fwd mutated its input s at path s[1]``."""
    return LawError(
        f"{fn}: {lens}: {which} mutated its {what} at path {path} "
        "(a lens never writes into its arguments: compute into fresh arrays)"
    )


def residue_aliases(lens: str, holder: str | None, what: str, path: str, where: str) -> LawError:
    """``the residue at m[0] aliases the caller's parameters p at path p``: the residue is not the lens's own."""
    at = f" at {holder}" if holder else ""
    return LawError(
        f"check_no_alias: {lens}: the residue{at} aliases the caller's {what} at path {path}: writing into it "
        f"between the forward and the backward pass changed bwd's {where} "
        "(a residue keeps its own copy of what it needs from p and s)"
    )
