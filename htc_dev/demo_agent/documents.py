"""A small local document set and its search tool, for the ``docs`` task family.

The documents describe invented towns, so a model cannot answer from what it
memorised in pre-training: it has to call ``lookup[...]`` and read the
passage. The retrieval is a plain BM25 ranking over the word tokens of each
passage (k1 = 1.2, b = 0.75); the tool returns the best passage, or the two
best when they score within 10% of each other (a realistic source of
confusion for the agent).
"""

from __future__ import annotations

import math
import re
from collections import Counter

#: town -> (founded, river, population, mayor, product, region); all invented
TOWNS: dict[str, tuple[int, str, int, str, str, str]] = {
    "Arlenford": (1742, "Vessa", 18400, "Mira Holt", "glassware", "the northern hills"),
    "Brackwell": (1811, "Tamber", 9200, "Owen Pryce", "wool", "the western coast"),
    "Calloway Cross": (1690, "Ember", 31500, "Lena Varga", "clocks", "the central plain"),
    "Dunmere": (1856, "Sill", 6700, "Rafael Ortiz", "cheese", "the eastern valley"),
    "Eskerby": (1723, "Vessa", 12100, "Ingrid Lund", "paper", "the northern hills"),
    "Fallowmouth": (1904, "Corran", 4300, "Amos Reed", "salt", "the southern marshes"),
    "Glenharrow": (1765, "Tamber", 22800, "Nadia Karim", "bicycles", "the western coast"),
    "Holloway Vale": (1832, "Ember", 8100, "Peter Quill", "honey", "the central plain"),
    "Ivorstead": (1678, "Sill", 27300, "Sofia Marin", "violins", "the eastern valley"),
    "Juniper Bay": (1921, "Corran", 5600, "Tomas Berg", "oysters", "the southern marshes"),
    "Kestrel Ford": (1799, "Vessa", 14900, "Hana Sato", "leather", "the northern hills"),
    "Larkmoor": (1748, "Tamber", 10300, "Colin Shaw", "pottery", "the western coast"),
    "Millbrook": (1884, "Ember", 7400, "Greta Novak", "flour", "the central plain"),
    "Northwick": (1702, "Sill", 19600, "Dev Patel", "candles", "the eastern valley"),
    "Oakhaven": (1867, "Corran", 3900, "Lucia Rossi", "rope", "the southern marshes"),
    "Penrith Hollow": (1736, "Vessa", 16200, "Jonas Weber", "maps", "the northern hills"),
    "Quarry End": (1895, "Tamber", 5100, "Alma Diaz", "granite", "the western coast"),
    "Ravenscar": (1659, "Ember", 24700, "Felix Grant", "ink", "the central plain"),
    "Silverdale": (1812, "Sill", 13800, "Yara Haddad", "silverware", "the eastern valley"),
    "Thornbury": (1777, "Corran", 11200, "Ruth Evans", "cider", "the southern marshes"),
}

_ATTRS = ("founded", "river", "population", "mayor", "product", "region")


def passage(town: str) -> str:
    founded, river, pop, mayor, product, region = TOWNS[town]
    return (f"{town} is a town in {region}, founded in {founded} on the river {river}. "
            f"It has {pop} inhabitants, its mayor is {mayor}, and it is known for its {product}.")


def attribute(town: str, attr: str) -> str:
    """The gold value of one attribute of a town (as text)."""
    return str(TOWNS[town][_ATTRS.index(attr)])


_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if len(t) > 1]


class DocumentIndex:
    """BM25 over a list of passages (one passage per document)."""

    def __init__(self, passages: list[str], k1: float = 1.2, b: float = 0.75):
        self.passages = list(passages)
        self.docs = [Counter(_tokens(p)) for p in self.passages]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)
        df = Counter(t for d in self.docs for t in d)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        q = _tokens(query)
        out = []
        for d, length in zip(self.docs, self.lengths):
            s = 0.0
            for t in q:
                f = d.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            out.append(s)
        return out


INDEX = DocumentIndex([passage(t) for t in TOWNS])


def lookup(arg: str) -> str:
    """Search the town documents: the best passage (two when the runner-up scores within 10%)."""
    if not _tokens(arg):
        return "Error: give keywords, e.g. lookup[Arlenford river]"
    scores = INDEX.scores(arg)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    if scores[order[0]] <= 0:
        return f"No document matches {arg.strip()!r}."
    best = [order[0]]
    if scores[order[1]] >= 0.9 * scores[order[0]]:
        best.append(order[1])
    return " ".join(INDEX.passages[i] for i in best)


__all__ = ["TOWNS", "passage", "attribute", "DocumentIndex", "INDEX", "lookup"]
