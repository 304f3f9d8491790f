"""Band math over a scene collection's assets, from a small grammar (never `eval`).

An expression is numbers, asset names, `+ - * /`, unary minus and parentheses: `(nir - red) / (nir + red)`.
Python's parser reads it into a tree, and only those node types are accepted and walked here, so no
name, call or attribute can reach the interpreter. Well-known indices are accepted by name (`ndvi`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from stacgis_common.arguments import ArgumentError
from stacgis_raster.records import BandInfo

MAX_LENGTH = 200
MAX_NODES = 60

# Indices by their usual names, over STAC `eo:bands` common names.
INDICES = {
    "ndvi": "(nir - red) / (nir + red)",
    "ndwi": "(green - nir) / (green + nir)",
    "nbr": "(nir - swir22) / (nir + swir22)",
    "ndmi": "(nir - swir16) / (nir + swir16)",
    "ndbi": "(swir16 - nir) / (swir16 + nir)",
}
# Spellings of the same band across catalogs (Earth Search, Planetary Computer, Landsat, Sentinel-2):
# whichever a collection has answers to all of them.
SYNONYMS = [("nir", "nir08"), ("swir16", "swir1"), ("swir22", "swir2")]

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


@dataclass(frozen=True)
class Expression:
    text: str  # as given
    formula: str  # with asset keys, e.g. "(nir - red) / (nir + red)"
    assets: tuple[str, ...]  # the asset keys it reads


def _resolver(asset_bands: Mapping[str, BandInfo]) -> dict[str, str]:
    names: dict[str, str] = {}
    for key, band in asset_bands.items():
        for name in (key, band.name, band.common_name):
            if name:
                names.setdefault(name.lower(), key)
    # A word of one asset's description names it ("precipitation" for `pr`, described "Monthly total
    # precipitation"): people and models write the quantity, not the file's key. Words two assets share
    # ("monthly") and short ones name nothing.
    owners: dict[str, set[str]] = {}
    for key, band in asset_bands.items():
        for word in re.findall(r"[a-z]{5,}", (band.description or "").lower()):
            owners.setdefault(word, set()).add(key)
    for word, keys in owners.items():
        if len(keys) == 1:
            names.setdefault(word, next(iter(keys)))
    for group in SYNONYMS:
        found = next((names[name] for name in group if name in names), None)
        if found is not None:
            for name in group:
                names.setdefault(name, found)
    return names


def parse(
    text: object, asset_bands: Mapping[str, BandInfo], collection_id: str, argument: str = "expression"
) -> Expression:
    """Check an expression against the collection's assets and name the assets it reads."""
    if not isinstance(text, str) or not text.strip():
        raise ArgumentError(argument, "expected band math such as '(nir - red) / (nir + red)' or an index name: ndvi")
    if len(text) > MAX_LENGTH:
        raise ArgumentError(argument, f"at most {MAX_LENGTH} characters")
    source = INDICES.get(text.strip().lower(), text.strip())
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ArgumentError(argument, f"'{text}' does not parse: {exc.msg}") from None
    except ValueError as exc:  # e.g. a NUL character
        raise ArgumentError(argument, f"does not parse: {exc}") from None
    names = _resolver(asset_bands)
    used: list[str] = []
    count = 0

    def walk(node: ast.AST) -> str:
        nonlocal count
        count += 1
        if count > MAX_NODES:
            raise ArgumentError(argument, f"too long: at most {MAX_NODES} terms and operators")
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return f"({walk(node.left)} {_OPERATORS[type(node.op)]} {walk(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return f"{'-' if isinstance(node.op, ast.USub) else '+'}{walk(node.operand)}"
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return repr(float(node.value))
        if isinstance(node, ast.Name):
            key = names.get(node.id.lower())
            if key is None:
                raise ArgumentError(
                    argument,
                    f"'{node.id}' is not an asset of '{collection_id}'; assets are {', '.join(asset_bands)}"
                    + (f"; indices: {', '.join(INDICES)}" if node.id.lower() not in INDICES else ""),
                )
            if key not in used:
                used.append(key)
            return key
        raise ArgumentError(argument, "only numbers, asset names, + - * / and parentheses are allowed")

    formula = walk(tree)
    if not used:
        raise ArgumentError(argument, "the expression reads no asset")
    return Expression(text.strip(), formula[1:-1] if formula.startswith("(") else formula, tuple(used))


def evaluate(formula: str, arrays: Mapping[str, np.ma.MaskedArray]) -> np.ma.MaskedArray:
    """The formula over masked arrays: a pixel is masked where an input is, or where it divides by zero."""
    tree = ast.parse(formula, mode="eval")

    # Values are masked arrays or floats; numpy's operators keep them so.
    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                return np.ma.divide(left, np.ma.masked_equal(right, 0) if np.ndim(right) else right)
        if isinstance(node, ast.UnaryOp):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Constant):
            return float(node.value)  # type: ignore[arg-type]
        if isinstance(node, ast.Name):
            return arrays[node.id].astype("float64")
        raise ValueError(f"unexpected node {type(node).__name__}")  # parse() admits none

    with np.errstate(divide="ignore", invalid="ignore"):
        result = walk(tree)
    if not isinstance(result, np.ma.MaskedArray):
        raise ValueError("an expression must read an asset")
    return np.ma.masked_invalid(result)
