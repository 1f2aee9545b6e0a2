"""The law kit's own messages (used nowhere else in prelens)."""

from __future__ import annotations

from prelens.errors import LawError


def law_raised(law: str, where: str, exc: BaseException) -> LawError:
    return LawError(f"law '{law}' fails: {where} raised {type(exc).__name__}: {exc}")


def vjp_violation(lens: str, lhs: float, rhs: float, leaf: str | None, err: float = 0.0) -> LawError:
    where = f"; the first wrong leaf is {leaf}" if leaf else ""
    return LawError(
        f"check_vjp: {lens}: bwd is not the reverse derivative of fwd: "
        f"<da, J·δ> by central differences = {lhs:.10g} (± {err:.2g}), "
        f"<bwd(da), δ> = {rhs:.10g}{where}"
    )


def vjp_needs_float64(lens: str, got: str, where: str) -> LawError:
    return LawError(f"check_vjp: {lens}: needs float64 leaves, got {got} at {where}")


def vjp_delta_structure(lens: str, what: str, of: str, found: str) -> LawError:
    return LawError(f"check_vjp: {lens}: bwd's {what} does not have the structure of the {of}: {found}")


def vjp_bwd_misfit(lens: str, exc: BaseException) -> LawError:
    return LawError(f"check_vjp: {lens}: bwd's deltas do not fit the parameters and input: {exc}")


def vjp_no_difference(lens: str, leaf: str | None) -> LawError:
    where = f" along {leaf}" if leaf else ""
    return LawError(
        f"check_vjp: {lens}: fwd gave non-finite outputs at every step of the finite differences{where}: "
        "check at a point where the lens is finite"
    )


def vjp_delta_dtype(lens: str, what: str, path: str, expected: str, got: str) -> LawError:
    return LawError(
        f"check_vjp: {lens}: bwd's {what} at {path} has dtype {got}, expected {expected} "
        "(a delta has the dtype of its primal)"
    )


def pure_mutated(fn: str, lens: str, which: str, what: str, path: str) -> LawError:
    """``fwd`` or ``bwd`` wrote into an argument: ``fwd mutated its input s at path s[1]``."""
    return LawError(
        f"{fn}: {lens}: {which} mutated its {what} at path {path} "
        "(a lens never writes into its arguments: compute into fresh arrays)"
    )


def pure_not_residue_only(fn: str, lens: str, order: str, where: str) -> LawError:
    return LawError(
        f"{fn}: {lens}: bwd uses something besides its residue: after two forward passes, "
        f"the backward passes run in {order} order gave another {where} than each run alone "
        "(everything bwd needs must travel in the residue, not in a closure, an attribute or a global)"
    )


def residue_aliases(lens: str, holder: str | None, what: str, path: str, where: str) -> LawError:
    """``the residue at m[0] aliases the caller's parameters p at path p``: the residue is not the lens's own."""
    at = f" at {holder}" if holder else ""
    return LawError(
        f"check_no_alias: {lens}: the residue{at} aliases the caller's {what} at path {path}: writing into it "
        f"between the forward and the backward pass changed bwd's {where} "
        "(a residue keeps its own copy of what it needs from p and s)"
    )
