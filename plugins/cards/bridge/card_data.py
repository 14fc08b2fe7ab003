"""Card data and deck lists for the phase bridge.

Cards come in MTGJSON's AtomicCards form ({"data": {card name: [faces]}}),
from the first of: the file the operator names (new_game's `cards`, which
the plugin takes from its LUDUS_CARDS_DATA setting, or the same environment
variable here), `mtgjson` for MTGJSON's own file downloaded on first use, or
the small file bundled with the bridge (cards.json). A file is indexed once
into SQLite in the cache directory, keyed by its digest, so a game opens the
index and reads only its decks' cards; the rules engine of a game is built
from those cards alone, whatever the size of the whole file.

Deck lists are read as players export them (MTGO or Arena text: `4 Lightning
Bolt`, optionally `(SET) 123`, a `Sideboard` section or a blank line before
it) and checked for their format: constructed (60 cards or more, four copies
at most but basic lands, a sideboard of 15 at most; a named format's legal
cards where the data carries legalities) or limited (40 cards or more).
"""

import difflib
import gzip
import hashlib
import json
import os
import re
import sqlite3
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.join(HERE, "cards.json")
MTGJSON_URL = "https://mtgjson.com/api/v5/AtomicCards.json.gz"
# Formats whose legal card lists MTGJSON carries (`legalities`).
NAMED_FORMATS = ("standard", "pioneer", "modern", "legacy", "vintage", "pauper", "commander")
INDEX_VERSION = "1"


def cache_dir():
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "ludus", "cards")


def source_path(named, notice):
    """The AtomicCards file to use: the one named, MTGJSON's (downloaded once),
    or the bundled one."""
    named = named or os.environ.get("LUDUS_CARDS_DATA") or ""
    if not named:
        return BUNDLED
    if named == "mtgjson":
        return download(notice)
    if not os.path.exists(named):
        raise ValueError(f"the card data file {named} does not exist (LUDUS_CARDS_DATA: an AtomicCards.json(.gz) file, or `mtgjson`)")
    return named


def download(notice):
    target = os.path.join(cache_dir(), "AtomicCards.json.gz")
    if os.path.exists(target):
        return target
    os.makedirs(cache_dir(), exist_ok=True)
    notice(f"first use: downloading MTGJSON's AtomicCards ({MTGJSON_URL}, about 100 MB)")
    tmp = target + ".part"
    try:
        with urllib.request.urlopen(MTGJSON_URL, timeout=60) as r, open(tmp, "wb") as f:
            total, done, said = int(r.headers.get("content-length") or 0), 0, time.monotonic()
            while chunk := r.read(1 << 20):
                f.write(chunk)
                done += len(chunk)
                if time.monotonic() - said > 5:
                    said = time.monotonic()
                    notice(f"downloading card data: {done >> 20} MB" + (f" of {total >> 20} MB" if total else ""))
        os.replace(tmp, target)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise ValueError(f"MTGJSON's card data could not be downloaded ({e}); name a local AtomicCards file in LUDUS_CARDS_DATA instead")
    return target


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:32]


def read_atomic(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            root = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"the card data file {path} is not readable AtomicCards JSON: {e}")
    data = root.get("data") if isinstance(root, dict) else None
    if not isinstance(data, dict):
        raise ValueError(f"the card data file {path} has no `data` object of card names (MTGJSON's AtomicCards form)")
    return data


def unimplemented(face, found=None):
    """What of a card the engine could not read: its reasons, empty when none."""
    found = [] if found is None else found
    if isinstance(face, dict):
        if face.get("type") == "Unimplemented":
            found.append(face.get("description") or face.get("name") or "unrecognised text")
        if isinstance(face.get("Unknown"), str):
            found.append(face["Unknown"])
        for v in face.values():
            unimplemented(v, found)
    elif isinstance(face, list):
        for v in face:
            unimplemented(v, found)
    return found


class CardData:
    """An indexed AtomicCards file."""

    def __init__(self, named=None, notice=lambda msg: None):
        path = source_path(named, notice)
        started = time.monotonic()
        key = digest(path)
        os.makedirs(cache_dir(), exist_ok=True)
        index = os.path.join(cache_dir(), f"index-{INDEX_VERSION}-{key}.sqlite")
        if not os.path.exists(index):
            notice(f"indexing the card data in {path} (once per file)")
            build_index(path, index)
        self.db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, check_same_thread=False)
        self.path = path
        self.count = self.db.execute("SELECT count(*) FROM cards").fetchone()[0]
        self.opened_ms = (time.monotonic() - started) * 1000

    def names(self):
        return [r[0] for r in self.db.execute("SELECT name FROM cards")]

    def row(self, name):
        return self.db.execute("SELECT name, entry, faces, problems FROM cards WHERE key = ?", (name.strip().lower(),)).fetchone()

    def resolve(self, name):
        """The card's own name, any case; unknown names get the nearest ones."""
        row = self.row(name)
        if row:
            return row[0]
        near = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ValueError(f"{name!r} is not in the card data ({self.count} cards){hint}")

    def entry(self, name):
        row = self.row(name)
        return json.loads(row[1]) if row else None

    def faces(self, names):
        """The engine's faces of these cards (every face of a multi-face card)."""
        out = {}
        for n in names:
            out.update(json.loads(self.row(n)[2]))
        return out

    def unsupported(self, names):
        """{card: the engine's reasons} for the cards it cannot play as printed."""
        out = {}
        for n in names:
            problems = json.loads(self.row(n)[3])
            if problems:
                out[n] = problems
        return out


def build_index(path, index):
    """Turns every card of an AtomicCards file into engine faces (phase's own
    MTGJSON reader) and stores them by name, with what the engine could not read."""
    from phase.gen import process_group

    data = read_atomic(path)
    # Two games may index the same file at once: each writes its own file and
    # the last rename wins (both are the same index).
    tmp = f"{index}.{os.getpid()}.part"
    db = sqlite3.connect(tmp)
    db.execute("CREATE TABLE cards (key TEXT PRIMARY KEY, name TEXT, entry TEXT, faces TEXT, problems TEXT)")
    rows = []
    for name, group in data.items():
        if not isinstance(group, list) or not group:
            continue
        faces = {}
        try:
            process_group(group, faces)
        except Exception as e:  # a card phase's reader refuses: kept, named as unsupported
            faces, problems = {}, [f"the engine cannot read it: {e}"]
        else:
            problems = [p for f in faces.values() for p in unimplemented(f)] if faces else ["the engine has no face for it"]
        rows.append((name.lower(), name, json.dumps(group[0]), json.dumps(faces), json.dumps(problems)))
    db.executemany("INSERT OR REPLACE INTO cards VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    os.replace(tmp, index)


# ---------------------------------------------------------------- deck lists

ENTRY = re.compile(r"(\d+)\s*x?\s+(.+?)(?:\s+\([A-Za-z0-9]{2,6}\)(?:\s+\S+)?)?")
HEADERS = {"deck", "main", "maindeck", "main deck", "companion", "commander", "about"}


def parse_deck(text, cards):
    """(main, sideboard) as {card name: count} from a list as players export it."""
    main, side = {}, {}
    section, seen = main, False
    lines = text.replace(";", "\n").splitlines()
    for raw in lines:
        line = raw.strip()
        if not line:
            # MTGO: a blank line after the main deck starts the sideboard.
            if seen and section is main:
                section = side
            continue
        low = line.lower().rstrip(":")
        if low in HEADERS or low.startswith("name "):
            section = main
            continue
        if low.startswith("sideboard"):
            section = side
            continue
        m = ENTRY.fullmatch(line)
        if not m:
            raise ValueError(f"cannot read deck line {line!r}: write a count and a card name, e.g. '4 Lightning Bolt'")
        name = cards.resolve(m.group(2))
        section[name] = section.get(name, 0) + int(m.group(1))
        seen = True
    return main, side


def is_basic_land(entry):
    return "Basic" in (entry.get("supertypes") or []) and "Land" in (entry.get("types") or [])


def check_deck(main, side, fmt, cards):
    """Every way the deck breaks its format's rules, as sentences."""
    n, s = sum(main.values()), sum(side.values())
    fmt = (fmt or ("constructed" if n >= 60 else "limited")).lower()
    problems = []
    if fmt == "limited":
        if n < 40:
            problems.append(f"a limited deck has at least 40 cards; this one has {n}")
    else:
        if fmt != "constructed" and fmt not in NAMED_FORMATS:
            raise ValueError(f"unknown format {fmt!r}; the formats are: constructed, limited, {', '.join(NAMED_FORMATS)}")
        if n < 60:
            problems.append(f"a constructed deck has at least 60 cards; this one has {n}")
        if s > 15:
            problems.append(f"a sideboard has at most 15 cards; this one has {s}")
        both = {k: main.get(k, 0) + side.get(k, 0) for k in {*main, *side}}
        for name, count in sorted(both.items()):
            if count > 4 and not is_basic_land(cards.entry(name)):
                problems.append(f"{count} copies of {name}: four at most (basic lands excepted)")
        if fmt in NAMED_FORMATS:
            for name in sorted({*main, *side}):
                status = (cards.entry(name).get("legalities") or {}).get(fmt)
                if status is None:
                    problems.append(f"{name} is not legal in {fmt} (the card data lists no {fmt} legality for it)")
                elif status == "Restricted" and both[name] > 1:
                    problems.append(f"{name} is restricted in {fmt}: one copy at most")
                elif status not in ("Legal", "Restricted"):
                    problems.append(f"{name} is {status.lower()} in {fmt}")
    if n > 250:
        problems.append(f"a deck has at most 250 cards; this one has {n}")
    return problems
