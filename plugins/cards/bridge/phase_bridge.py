#!/usr/bin/env python3
"""Magic: The Gathering on the phase rules engine, behind XMage's decision tools.

An MCP server (JSON-RPC 2.0, one message per line on stdin/stdout) that
speaks the tool surface of XMage's headless client -- is_action_on_me,
wait_for_action, pass_priority, auto_pass_until_event, take_action,
get_action_choices, choose_action, get_game_state, get_game_log,
get_oracle_text, send_chat_message, concede -- over one game of the phase
engine (PyPI `phase-python`). The Ludus `cards` plugin drives it exactly as
it drives XMage's client, so one plugin code path serves both.

Two differences from XMage's client, both additive:
- `new_game` (an extra tool) starts the game: decks, seed, which seats are
  agents and which are phase's AI. XMage's client is configured when it is
  launched instead.
- One process serves every seat of its game. A request names its seat in
  `params._meta.seat` (default 0); XMage runs one client per seat and needs
  no such field.

Hidden information stays hidden: a seat sees its own hand and the sizes of
the other zones, never another seat's hand or any library. Nothing an agent
writes reaches the engine: decisions arrive as indexes, booleans and numbers
into lists this program made.

Stdout carries only protocol messages; diagnostics go to stderr.

Shared (`LUDUS_ENGINE_SHARED=1`): one process serves many games. Every line
in is `TAG MESSAGE` for the game the host numbered TAG, every answer goes out
as `TAG ANSWER`, and `-TAG` says game TAG is gone. Each game has its own
`Bridge`; the card data and the rules engine built for a set of cards are
shared by the games that use them.
"""

import json
import os
import re
import select
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL = "2024-11-05"
MAX_LOG = 5000
# The rules engine, pinned: its decision shapes are what this bridge maps.
PHASE_REQUIREMENT = "phase-python==0.103.0"
AI_LEVELS = ("VeryEasy", "Easy", "Medium", "Hard", "VeryHard")


def log(msg):
    print(f"phase-bridge: {msg}", file=sys.stderr, flush=True)


def notice(msg):
    """Tells the client what is taking so long (first-use install) as an MCP
    logging notification, and the server log through stderr."""
    log(msg)
    send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "phase-bridge", "data": msg}})


# ---------------------------------------------------------------- cards


def load_decks():
    """The built-in decks: a name, a title, a format and a list as players write it."""
    with open(os.path.join(HERE, "decks.json"), encoding="utf-8") as f:
        return json.load(f)


def deck_list(spec, cards, decks, fmt):
    """A deck name or a deck list as text, checked against the card data and
    the format; the main deck's cards, one entry per card."""
    from card_data import check_deck, parse_deck

    if not isinstance(spec, str):
        raise ValueError("a deck is a deck name or a deck list as text ('4 Lightning Bolt', one card per line or ';')")
    if spec in decks:
        fmt = fmt or decks[spec].get("format")
        spec = decks[spec]["list"]
    elif not re.search(r"\d", spec):
        raise ValueError(f"unknown deck {spec!r}; the decks are: {', '.join(sorted(decks))} (or give a list: '4 Lightning Bolt; 20 Mountain; ...')")
    main, side = parse_deck(spec, cards)
    problems = check_deck(main, side, fmt, cards)
    unsupported = cards.unsupported(list(main))
    problems += [f"{name} is not supported by the rules engine ({'; '.join(why[:2])})" for name, why in sorted(unsupported.items())]
    if problems:
        raise ValueError("this deck cannot be played: " + "; ".join(problems))
    return [name for name, count in main.items() for _ in range(count)]


def oracle_text(entry):
    lines = [f"{entry['name']} {entry.get('manaCost', '')}".strip(), entry["type"]]
    if entry.get("text"):
        lines.append(entry["text"])
    if "power" in entry:
        lines.append(f"{entry['power']}/{entry['toughness']}")
    if "loyalty" in entry:
        lines.append(f"Loyalty {entry['loyalty']}")
    return "\n".join(lines)


# ---------------------------------------------------------------- the game


class Table:
    """One phase game, its seats, and what each seat has staged."""

    def __init__(self, cards, decks, args):
        from phase import Engine

        seats = args.get("seats") or ["agent", "ai"]
        if len(seats) != 2 or any(s not in ("agent", "ai") for s in seats):
            raise ValueError('seats is a list of two of "agent" and "ai"')
        level = args.get("ai_level", "Medium")
        # `ai_levels`, one per seat, is for measuring levels against each other.
        levels = args.get("ai_levels") or [level, level]
        if len(levels) != 2 or any(lv not in AI_LEVELS for lv in levels):
            raise ValueError(f"ai_level is one of {', '.join(AI_LEVELS)}")
        given = args.get("decks")
        if given is not None and len(given) != 2:
            raise ValueError(f"decks is a list of two decks, yours first; {len(given)} given (leave it out for the default decks)")
        lists = [deck_list(d, cards, decks, args.get("format")) for d in (given or ["izzet-tempo", "selesnya-beasts"])]
        # The engine knows this game's cards only: quick to build whatever the
        # card data's size, and built once per set of cards in a process.
        engine = engine_for(Engine, cards, set(lists[0]) | set(lists[1]))
        if len(lists) != 2:
            raise ValueError("decks is a list of two decks")
        # phase takes any 64-bit seed; every bit of it counts.
        seed = int(args.get("seed", 0)) % (1 << 64)
        first = int(args.get("first_player", 0))
        self.seats, self.levels, self.cards = seats, levels, cards
        self.game = engine.new_game(lists[0], lists[1], seed=seed, first_player=first)
        self.log = []  # (visibility seat or None, text)
        self.chat = []
        self.staged = {0: set(), 1: set()}  # attackers / blocks being chosen
        self.conceded = None
        self.turn_of = None  # (turn number, whose turn it is)
        self.before_end = None  # each player's zones just before the game ended
        # Everything that changed the game, in order: with the seed and the
        # decks, what rebuilds it (`replay`) after the host restarted.
        self.journal = []
        for entry in args.get("replay") or []:
            self.redo(entry)
        self.advance()

    def redo(self, entry):
        """Applies one journal entry again (a game being rebuilt)."""
        from phase import GameAction

        kind, seat = entry[0], int(entry[1])
        if kind == "act":
            self.apply(seat, GameAction.from_dict(entry[2]))
        elif kind == "chat":
            self.say(seat, entry[2])
        elif kind == "concede":
            self.concede(seat)
        else:
            raise ValueError(f"unknown journal entry {kind!r}")

    def say(self, seat, msg):
        self.chat.append(f"Player {seat + 1}: {msg}")
        self.log.append((None, f"chat Player {seat + 1}: {msg}"))
        self.journal.append(["chat", seat, msg])

    def concede(self, seat):
        if not self.over():
            self.conceded = seat
            self.log.append((None, f"Player {seat + 1} concedes."))
            self.journal.append(["concede", seat])

    # -- whose move

    def waiting(self):
        return self.game.waiting_for()

    def actor(self, w=None):
        w = w or self.waiting()
        d = w.get("data") or {}
        if w["type"] == "GameOver":
            return None
        if isinstance(d, dict) and d.get("pending"):
            return d["pending"][0]["player"]
        if isinstance(d, dict) and "player" in d:
            return d["player"]
        return self.game.priority_player()

    def over(self):
        return self.conceded is not None or self.waiting()["type"] == "GameOver"

    def winner(self):
        if self.conceded is not None:
            return 1 - self.conceded
        w = self.waiting()
        return (w.get("data") or {}).get("winner") if w["type"] == "GameOver" else None

    def apply(self, seat, action):
        # phase exiles an eliminated player's cards: the zones as they were
        # before the action that ends the game are what the final state shows.
        zones = self.zones()
        result = self.game.apply(seat, action)
        if self.over() and self.before_end is None:
            self.before_end = zones
        self.journal.append(["act", seat, action.to_dict() if hasattr(action, "to_dict") else action])
        for entry in result.log_entries or []:
            segments = entry.get("segments", [])
            text = "".join(seg_text(s) for s in segments)
            hidden = (entry.get("presentation") or {}).get("visibility") == "HiddenInformation"
            # Hidden news (a card drawn) is its player's: the first player the line names.
            owner = next((sg["value"].get("player_id") for sg in segments
                          if sg.get("type") == "PlayerName" and isinstance(sg.get("value"), dict)), seat)
            self.log.append((owner if hidden else None, f"T{entry.get('turn')} {entry.get('phase')}: {text}"))
        del self.log[:-MAX_LOG]
        self.staged[seat] = set()

    def zones(self):
        """Each player's library and graveyard ids and the battlefield: what an
        elimination takes away."""
        return {"players": [self.player(i) for i in (0, 1)], "battlefield": self.game.battlefield()}

    def active_seat(self):
        """Whose turn it is (the engine's full state is read once a turn)."""
        turn = self.game.turn
        if self.turn_of is None or self.turn_of[0] != turn:
            self.turn_of = (turn, self.game.state()["state"]["active_player"])
        return self.turn_of[1]

    def advance(self):
        """Lets phase's AI play its seats until an agent seat must decide."""
        for _ in range(100000):
            if self.over():
                return
            seat = self.actor()
            if seat is None or self.seats[seat] != "ai":
                return
            action = self.game.choose_action(seat, difficulty=self.levels[seat]) or self.game.actions()[0]
            self.apply(seat, action)

    # -- what a seat sees

    def pending(self, seat):
        """The decision due from `seat` in XMage's shape, or None."""
        if self.over() or self.actor() != seat:
            return None
        w = self.waiting()
        kind, data = w["type"], w.get("data") or {}
        acts = self.game.actions()
        p = {"action_type": kind, "actions": acts}
        if kind == "Priority":
            plays = [a for a in acts if a.kind != "PassPriority"]
            p.update(response_type="select", message="You have priority: play a card or ability by index, or pass (answer: false).",
                     choices=[self.describe(a) for a in plays], options=plays, can_pass=True)
        elif kind == "MulliganDecision" and data["pending"][0]["phase"]["type"] == "Declare":
            hand = [self.card_name(i) for i in self.player(seat)["hand"]]
            p.update(response_type="boolean", message=f"Mulligan? answer true to mulligan, false to keep: {', '.join(hand)}",
                     hand=hand, yes=pick(acts, "MulliganDecision", lambda d: d["choice"]["type"] == "Mulligan"),
                     no=pick(acts, "MulliganDecision", lambda d: d["choice"]["type"] == "Keep"))
        elif kind == "ChooseXValue":
            p.update(response_type="amount", message=f"Choose X ({data['min']} to {data['max']}), or cancel the spell (answer: false).",
                     min=data["min"], max=data["max"], can_pass=True,
                     by_amount={a.data["value"]: a for a in acts if a.kind == "ChooseX"},
                     no=pick(acts, "CancelCast", lambda d: True))
        elif kind == "DeclareAttackers":
            # One choice per attacker and what it may attack: the opponent, a
            # planeswalker or a battle. Choosing a second target for the same
            # attacker replaces the first.
            by_attacker = data.get("valid_attack_targets_by_attacker") or {}
            pairs = [(i, tgt) for i in data.get("valid_attacker_ids", [])
                     for tgt in by_attacker.get(str(i), data.get("valid_attack_targets") or [])]
            staged = self.staged[seat]
            # Choice 0 declares what is marked, so an agent that always takes
            # the first choice moves the game on instead of marking and
            # unmarking the same attacker for ever.
            marked = sum(1 for i, tgt in pairs if (i, json.dumps(tgt)) in staged)
            p.update(response_type="select", message="Declare attackers: choose an attacker and what it attacks by index (again to undo), then choose 0 (or answer: false) to attack with those marked [x].",
                     choices=[f"declare the {marked} attacker(s) marked [x]" if marked else "declare no attackers"]
                     + [f"{'[x] ' if (i, json.dumps(tgt)) in staged else ''}attack {self.attack_target(tgt)} with {self.card_name(i)} (#{i})"
                        for i, tgt in pairs],
                     toggles=[None] + [(i, json.dumps(tgt)) for i, tgt in pairs], can_pass=True)
        elif kind == "ScryChoice":
            cards = data.get("cards", [])
            opts = [a for a in acts if a.kind == "SelectCards"]
            def scry(a):
                top = a.data["cards"]
                bottom = [c for c in cards if c not in top]
                names = lambda ids: ", ".join(f"{self.card_name(c)} (#{c})" for c in ids) or "nothing"
                return f"keep on top: {names(top)}; put on the bottom: {names(bottom)}"
            p.update(response_type="index", message="Scry: choose which cards stay on top of your library (the rest go to the bottom).",
                     choices=[scry(a) for a in opts], options=opts, can_pass=False)
        elif kind == "DeclareBlockers":
            pairs = [(int(b), a) for b, attackers in (data.get("valid_block_targets") or {}).items() for a in attackers]
            marked = sum(1 for pr in pairs if pr in self.staged[seat])
            p.update(response_type="select", message="Declare blockers: choose blocks by index (again to undo), then choose 0 (or answer: false) to block with those marked [x].",
                     choices=[f"declare the {marked} block(s) marked [x]" if marked else "declare no blocks"]
                     + [f"{'[x] ' if pr in self.staged[seat] else ''}block {self.card_name(pr[1])} (#{pr[1]}) with {self.card_name(pr[0])} (#{pr[0]})" for pr in pairs],
                     toggles=[None] + pairs, can_pass=True)
        else:
            # Targets, cards to bottom or discard, the legend rule, and anything
            # else phase asks: one choice per legal action; cancelling a cast is
            # answer: false where the engine allows it.
            cancel = pick(acts, "CancelCast", lambda d: True)
            opts = [a for a in acts if a.kind != "CancelCast"]
            if kind == "MulliganDecision":
                # Putting cards on the bottom: the other player's pending
                # keep/mulligan actions are listed too, but are not ours.
                opts = [a for a in opts if a.kind == "SelectCards"]
            p.update(response_type="index", message=prompt_message(kind, data, self.spell_of(data)),
                     choices=[self.describe(a) for a in opts], options=opts, can_pass=cancel is not None, no=cancel)
            if kind == "TargetSelection":
                p.update(required=True, can_cancel=cancel is not None)
        return p

    def player(self, seat):
        return self.game.player(seat)

    def spell_of(self, data):
        """The spell or ability a decision is for, named."""
        cast = data.get("pending_cast") if isinstance(data, dict) else None
        return self.card_name(cast["object_id"]) if isinstance(cast, dict) and "object_id" in cast else None

    def attack_target(self, tgt):
        kind, value = tgt.get("type"), tgt.get("data")
        if kind == "Player":
            return f"Player {value + 1}"
        obj = self.game.object(value) or {}
        return f"{obj.get('name', '#' + str(value))} (#{value}, {kind.lower()} of Player {obj.get('controller', 0) + 1})"

    def card_name(self, object_id):
        try:
            return (self.game.object(object_id) or {}).get("name", f"#{object_id}")
        except Exception:
            return f"#{object_id}"

    def describe(self, action):
        d = action.data or {}
        k = action.kind
        if k == "PlayLand":
            return f"play {self.card_name(d['object_id'])}"
        if k == "CastSpell":
            return f"cast {self.card_name(d['object_id'])}"
        if k == "ActivateAbility":
            obj = self.game.object(d["source_id"]) or {}
            abilities = obj.get("abilities") or []
            abil = abilities[d["ability_index"]] if d["ability_index"] < len(abilities) else {}
            return f"activate {obj.get('name', '#' + str(d['source_id']))}: {abil.get('description') or 'ability ' + str(d['ability_index'])}"
        if k == "ChooseTarget":
            t = d["target"]
            if "Player" in t:
                return f"target Player {t['Player'] + 1}" + (" (you)" if t["Player"] == self.actor() else " (opponent)")
            if "Object" in t:
                obj = self.game.object(t["Object"]) or {}
                owner = obj.get("controller")
                whose = "" if owner is None else (", yours" if owner == self.actor() else f", Player {owner + 1}'s")
                return f"target {obj.get('name', '#' + str(t['Object']))} (#{t['Object']}{whose})"
            return f"target {json.dumps(t)}"
        if k == "SelectCards":
            return "choose " + ", ".join(f"{self.card_name(i)} (#{i})" for i in d["cards"])
        if k == "ChooseLegend":
            return f"keep {self.card_name(d['keep'])} (#{d['keep']})"
        return f"{k} {json.dumps(d)}" if d else k

    def context(self, seat):
        """Where the game stands, in XMage's terms: `active_player` is whose
        turn it is, `priority_player` the seat due to act."""
        step = self.game.phase
        active = None if self.over() else self.active_seat()
        phase = phase_of(step)
        return {
            "turn": self.game.turn,
            "phase": phase,
            "step": step,
            "active_player": active,
            "priority_player": self.actor(),
            "is_my_main_phase": active == seat and phase.endswith("Main"),
            "players": [{"seat": i, "name": f"Player {i + 1}", "life": self.player(i)["life"], "is_you": i == seat} for i in (0, 1)],
        }

    def card(self, o, playable=()):
        """A card in hand in XMage's shape."""
        types = o.get("card_types") or {}
        out = {"object_id": o["id"], "name": o["name"], "mana_value": mana_value(o.get("mana_cost")),
               "is_land": "Land" in types.get("core_types", []), "playable": o["id"] in playable}
        cost = mana_text(o.get("mana_cost"))
        if cost:
            out["mana_cost"] = cost
        if o.get("power") is not None:
            out["power"], out["toughness"] = str(o["power"]), str(o["toughness"])
        return out

    def playable(self, seat):
        """Ids of the cards and permanents `seat` may play or activate now."""
        if self.over() or self.actor() != seat or self.waiting()["type"] != "Priority":
            return set()
        ids = set()
        for a in self.game.actions():
            d = a.data or {}
            ids.add(d.get("object_id", d.get("source_id")))
        return ids

    def permanent(self, o, seat, turn, active):
        if o.get("face_down") and o.get("controller") != seat:
            return {"object_id": o["id"], "controller": o["controller"], "name": "face-down card", "types": "", "tapped": o["tapped"]}
        types = o.get("card_types") or {}
        item = {"object_id": o["id"], "name": o["name"], "controller": o["controller"], "tapped": o["tapped"],
                "types": type_line(types)}
        if o.get("power") is not None:
            item["power"], item["toughness"], item["damage"] = o["power"], o["toughness"], o.get("damage_marked", 0)
            # Sick until its controller began a turn in control of it.
            began = turn if o["controller"] == active else turn - 1
            item["summoning_sickness"] = "Creature" in types.get("core_types", []) and (o.get("entered_battlefield_turn") or 0) >= began
        if o.get("loyalty") is not None:
            item["loyalty"] = o["loyalty"]
        if o.get("attached_to") is not None:
            item["attached_to"] = o["attached_to"]
        if o.get("counters"):
            item["counters"] = o["counters"]
        return item

    def state(self, seat):
        """The game from `seat`: its own hand, every player's permanents,
        graveyard and the sizes of hidden zones."""
        cx = self.context(seat)
        zones = self.before_end if self.over() and self.before_end else None
        pls = zones["players"] if zones else [self.player(i) for i in (0, 1)]
        field = zones["battlefield"] if zones else self.game.battlefield()
        playable = self.playable(seat)
        players = []
        for i in (0, 1):
            pl = pls[i]
            view = {
                "seat": i,
                "name": f"Player {i + 1}",
                "you": i == seat,
                "is_active": cx["active_player"] == i,
                # The life now (below zero for the loser), the zones from before an elimination.
                "life": cx["players"][i]["life"],
                "hand_size": len(pl["hand"]),
                "library_size": len(pl["library"]),
                "graveyard": [self.card_name(c) for c in pl["graveyard"]],
                "battlefield": [self.permanent(o, seat, cx["turn"], cx["active_player"]) for o in field if o.get("controller") == i],
            }
            if pl.get("poison_counters"):
                view["counters"] = {"poison": pl["poison_counters"]}
            if i == seat:
                view["hand"] = ([{"object_id": c, "name": self.card_name(c)} for c in pl["hand"]] if zones
                                else [self.card(o, playable) for o in self.game.hand(i)])
            players.append(view)
        stack = [{"name": s.get("name") or self.card_name(s.get("source_id", s.get("id", -1))), "controller": s.get("controller")}
                 for s in (self.game.stack() or []) if isinstance(s, dict)]
        return {**cx, "players": players, "stack": stack, "game_over": self.over(), "winner": self.winner()}

    def visible_log(self, seat):
        return "\n".join(text for who, text in self.log if who is None or who == seat)


def seg_text(seg):
    v = seg.get("value")
    if isinstance(v, dict):
        return str(v.get("name", v))
    return str(v)


def pick(actions, kind, test):
    for a in actions:
        if a.kind == kind and test(a.data or {}):
            return a
    return None


PHASES = {"Untap": "Beginning", "Upkeep": "Beginning", "Draw": "Beginning", "PreCombatMain": "Precombat Main",
          "BeginCombat": "Combat", "DeclareAttackers": "Combat", "DeclareBlockers": "Combat", "CombatDamage": "Combat",
          "FirstStrikeDamage": "Combat", "EndCombat": "Combat", "PostCombatMain": "Postcombat Main", "End": "End", "Cleanup": "End"}


def phase_of(step):
    """XMage's phase for phase's step name."""
    return PHASES.get(step, step)


COLOR_SYMBOL = {"White": "W", "Blue": "U", "Black": "B", "Red": "R", "Green": "G", "Colorless": "C", "X": "X"}


def mana_text(cost):
    """A mana cost as players write it: {2}{U}{U}."""
    if not isinstance(cost, dict) or cost.get("type") != "Cost":
        return None
    generic = cost.get("generic", 0)
    shards = "".join("{" + COLOR_SYMBOL.get(sh, sh) + "}" for sh in cost.get("shards", []))
    return ("{%d}" % generic if generic else "") + shards or "{0}"


def mana_value(cost):
    if not isinstance(cost, dict) or cost.get("type") != "Cost":
        return 0
    return cost.get("generic", 0) + sum(1 for sh in cost.get("shards", []) if sh != "X")


def type_line(types):
    left = " ".join(types.get("supertypes", []) + types.get("core_types", []))
    sub = " ".join(types.get("subtypes", []))
    return f"{left} — {sub}" if sub else left


def prompt_message(kind, data, spell=None):
    return {
        "TargetSelection": f"Choose a target for {spell or 'the spell'} by index, or cancel it (answer: false).",
        "DiscardToHandSize": f"Discard down to hand size: choose {data.get('count', 1)} card(s) by index.",
        "MulliganDecision": "Choose a card to put on the bottom of your library by index.",
        "ChooseLegend": "Legend rule: choose the one to keep by index.",
    }.get(kind, f"{kind}: choose by index.")


# ---------------------------------------------------------------- the tools


TOOLS = [
    ("new_game", "Start the game (bridge extra; XMage's client is configured at launch). seats: two of agent|ai; decks: two deck names or {card: count}; seed; first_player; ai_level; replay: the journal a game's answers carried (in _meta.journal), to rebuild it.",
     {"seats": {"type": "array"}, "decks": {"type": "array"}, "seed": {"type": "integer"}, "first_player": {"type": "integer"}, "ai_level": {"type": "string"}, "replay": {"type": "array"}}),
    ("is_action_on_me", "Whether a decision is pending for you, without waiting.", {}),
    ("wait_for_action", "Wait until a decision is pending for you (or the game ends).", {"timeout_ms": {"type": "integer", "default": 15000}}),
    ("pass_priority", "Pass priority until you can actually do something: a decision other than priority, or priority with something to play.", {"timeout_ms": {"type": "integer", "default": 30000}}),
    ("auto_pass_until_event", "Pass priority until the game log grows by min_new_chars or a decision is due.", {"min_new_chars": {"type": "integer", "default": 50}, "timeout_ms": {"type": "integer", "default": 10000}}),
    ("take_action", "Take the default action: pass priority, keep a hand, or the first choice.", {}),
    ("get_action_choices", "The pending decision with its choices.", {}),
    ("choose_action", "Answer the pending decision: index, answer, amount, amounts or pile.", {"index": {"type": "integer"}, "answer": {"type": "boolean"}, "amount": {"type": "integer"}, "amounts": {"type": "array"}, "pile": {"type": "integer"}}),
    ("get_game_state", "Players, life, your hand, the battlefield, the stack.", {}),
    ("get_game_log", "The game log as you may see it.", {"max_chars": {"type": "integer"}}),
    ("get_oracle_text", "A card's rules text by card_name or object_id (exactly one).", {"card_name": {"type": "string"}, "object_id": {"type": "integer"}}),
    ("send_chat_message", "Say something to the table.", {"message": {"type": "string"}}),
    ("concede", "Concede the game.", {}),
]


class ToolError(Exception):
    pass


# What the games of one process share: the card data by file, and the rules
# engine built for each set of cards (by file and card names).
CARD_DATA = {}
ENGINES = {}


def engine_for(Engine, cards, names):
    key = (cards.path, frozenset(names))
    if key not in ENGINES:
        ENGINES[key] = Engine.from_json(json.dumps(cards.faces(names)))
    return ENGINES[key]


class Bridge:
    def __init__(self):
        self.decks = load_decks()
        self.card_data = None
        self.table = None
        self.waits = []  # (deadline, request id, seat, tool, args)
        self.journaled = 0  # journal entries already sent with an answer

    def news(self):
        """The journal entries no answer has carried yet: every answer hands
        them to the host, which keeps them to rebuild the game."""
        if self.table is None:
            return []
        new = self.table.journal[self.journaled:]
        self.journaled = len(self.table.journal)
        return new

    # -- dispatch

    def cards(self, named=None):
        """The card data: the file a game names, else the default (opened once)."""
        from card_data import CardData

        if self.card_data is None or (named and named != self.card_data.path):
            if named not in CARD_DATA:
                data = CARD_DATA[named] = CardData(named, notice)
                log(f"card data: {data.count} cards from {data.path} ({data.opened_ms:.0f} ms)")
            self.card_data = CARD_DATA[named]
        return self.card_data

    def call(self, seat, name, args):
        if name == "new_game":
            if self.table is not None:
                raise ToolError("the game has already started")
            try:
                self.table = Table(self.cards(args.get("cards")), self.decks, args)
            except (ValueError, TypeError, KeyError) as e:
                raise ToolError(str(e))
            return self.action_info(seat)
        if name == "get_oracle_text":
            return self.oracle(seat, args)
        if name == "send_chat_message":
            msg = str(args.get("message", ""))[:500]
            if self.table:
                self.table.say(seat, msg)
            return {"sent": True}
        t = self.need_table()
        if seat not in (0, 1):
            raise ToolError("seat must be 0 or 1")
        if name == "is_action_on_me":
            return self.action_info(seat)
        if name == "get_action_choices":
            return self.choices(seat)
        if name == "get_game_state":
            return t.state(seat)
        if name == "get_game_log":
            full = t.visible_log(seat)
            n = args.get("max_chars")
            # XMage's client: 0 (or none) is the whole log, else its last n characters.
            text = full[-n:] if isinstance(n, int) and 0 < n < len(full) else full
            return {"log": text, "total_length": len(full), "returned_length": len(text), "truncated": len(text) < len(full)}
        if name == "take_action":
            return self.take_default(seat)
        if name == "choose_action":
            return self.choose(seat, args)
        if name == "concede":
            t.concede(seat)
            self.check_waits()
            return {"success": True, **self.action_info(seat)}
        raise ToolError(f"unknown tool {name}")

    def need_table(self):
        if self.table is None:
            raise ToolError("no game yet: call new_game first")
        return self.table

    # -- answers

    def action_info(self, seat):
        t = self.need_table()
        p = t.pending(seat)
        out = {"action_pending": p is not None, "game_over": t.over(), "winner": t.winner()}
        if p:
            out.update(action_type=p["action_type"], message=p["message"])
        return out

    def choices(self, seat):
        t = self.need_table()
        p = t.pending(seat)
        if p is None:
            return {"action_pending": False, "game_over": t.over(), "winner": t.winner(), "context": t.context(seat)}
        out = {"action_pending": True, "action_type": p["action_type"], "message": p["message"],
               "response_type": p["response_type"], "context": t.context(seat)}
        if "choices" in p:
            out["choices"] = [{"index": i, "description": c} for i, c in enumerate(p["choices"])]
        if p["response_type"] == "amount":
            out["min"], out["max"] = p["min"], p["max"]
        if "hand" in p:
            # A mulligan: the hand as XMage's client shows it.
            hand = [t.card(o) for o in t.game.hand(seat)]
            out.update(your_hand=hand, hand_size=len(hand), land_count=sum(1 for c in hand if c["is_land"]))
        for key in ("required", "can_cancel"):
            if key in p:
                out[key] = p[key]
        if p.get("can_pass"):
            out["can_pass"] = True
        return out

    def choose(self, seat, args):
        t = self.need_table()
        p = t.pending(seat)
        if p is None:
            raise ToolError("no decision is pending for you")
        given = [k for k in ("index", "answer", "amount", "amounts", "pile") if args.get(k) is not None]
        if len(given) != 1:
            raise ToolError(f"give exactly one of index, answer, amount, amounts, pile (a {p['response_type']} decision)")
        key, value = given[0], args[given[0]]
        rt = p["response_type"]
        if key == "answer":
            if rt == "boolean":
                t.apply(seat, p["yes"] if value else p["no"])
            elif value is False and "toggles" in p:
                self.commit_staged(t, seat, p)
            elif value is False and p.get("can_pass"):
                t.apply(seat, p["no"] if p.get("no") is not None else pick(p["actions"], "PassPriority", lambda d: True))
            else:
                raise ToolError(f"answer {str(value).lower()} does not fit this {rt} decision")
        elif key == "index" and rt in ("select", "index"):
            n = len(p["choices"])
            if not isinstance(value, int) or not 0 <= value < n:
                raise ToolError(f"index_out_of_range: {value} is not one of 0..{n - 1}")
            if "toggles" in p:
                item = p["toggles"][value]
                if item is None:
                    self.commit_staged(t, seat, p)
                    t.advance()
                    self.check_waits()
                    return {"accepted": True, **self.action_info(seat)}
                if p["action_type"] == "DeclareAttackers" and item not in t.staged[seat]:
                    # An attacker attacks one thing: a new target replaces the old.
                    t.staged[seat] = {x for x in t.staged[seat] if x[0] != item[0]}
                t.staged[seat] ^= {item}
                return {"staged": True, **self.choices(seat)}
            t.apply(seat, p["options"][value])
        elif key == "amount" and rt == "amount":
            if not isinstance(value, int) or value not in p["by_amount"]:
                raise ToolError(f"amount must be a whole number from {p['min']} to {p['max']}")
            t.apply(seat, p["by_amount"][value])
        else:
            raise ToolError(f"{key} does not fit this {rt} decision")
        t.advance()
        self.check_waits()
        return {"accepted": True, **self.action_info(seat)}

    def commit_staged(self, t, seat, p):
        from phase import GameAction

        staged = t.staged[seat]
        if p["action_type"] == "DeclareAttackers":
            attacks = [[i, json.loads(tgt)] for (i, tgt) in p["toggles"][1:] if (i, tgt) in staged]
            action = GameAction.from_dict({"type": "DeclareAttackers", "data": {"attacks": attacks, "bands": []}})
        else:
            pairs = [[b, a] for (b, a) in p["toggles"][1:] if (b, a) in staged]
            action = GameAction.from_dict({"type": "DeclareBlockers", "data": {"assignments": pairs}})
        try:
            t.apply(seat, action)
        except ValueError as e:
            t.staged[seat] = set()
            # The engine speaks of ObjectId(24): name the card.
            why = re.sub(r"ObjectId\((\d+)\)", lambda m: f"{t.card_name(int(m.group(1)))} (#{m.group(1)})", str(e))
            raise ToolError(f"that declaration is not allowed: {why}; the choices are cleared, choose again")

    def take_default(self, seat):
        t = self.need_table()
        p = t.pending(seat)
        if p is None:
            raise ToolError("no decision is pending for you")
        if p["response_type"] == "boolean":
            t.apply(seat, p["no"])
        elif "toggles" in p:
            self.commit_staged(t, seat, p)
        elif p["action_type"] == "Priority":
            t.apply(seat, pick(p["actions"], "PassPriority", lambda d: True))
        elif p["response_type"] == "amount":
            t.apply(seat, p["by_amount"][p["min"]])
        else:
            t.apply(seat, p["options"][0])
        t.advance()
        self.check_waits()
        return {"accepted": True, **self.action_info(seat)}

    def oracle(self, seat, args):
        name, oid = args.get("card_name"), args.get("object_id")
        if (name is None) == (oid is None):
            raise ToolError("give exactly one of card_name and object_id")
        if oid is not None:
            t = self.need_table()
            if not str(oid).isdigit():
                raise ToolError(f"object_id {oid!r} is not an object id of this game: they are numbers, e.g. \"24\" (see get_game_state)")
            try:
                obj = t.game.object(int(oid))
            except Exception:
                obj = None
            if not obj:
                raise ToolError(f"no object {oid} in this game")
            hidden = obj.get("zone") == "Library" or (obj.get("zone") == "Hand" and obj.get("owner") != seat) or (
                obj.get("face_down") and obj.get("controller") != seat)
            if hidden:
                raise ToolError(f"object {oid} is hidden from you")
            name = obj["name"]
        try:
            cards = self.table.cards if self.table else self.cards()
            match = cards.entry(cards.resolve(str(name)))
        except ValueError as e:
            raise ToolError(str(e))
        out = {"success": True, "source": "game" if oid is not None else "database", "name": match["name"],
               "rules": [line for line in (match.get("text") or "").split("\n") if line], "oracle_text": oracle_text(match)}
        printings = match.get("printings") or []
        if printings:
            out["set_code"] = printings[0]
        if oid is not None:
            out["object_id"] = str(oid)
        return out

    # -- waiting tools: held here until the seat has a decision

    def start_wait(self, req_id, seat, name, args):
        t = self.need_table()
        timeout = args.get("timeout_ms", {"wait_for_action": 15000, "pass_priority": 30000}.get(name, 10000))
        timeout = max(0, min(int(timeout), 600000))
        state = {"passed": 0, "log_start": len(t.visible_log(seat))}
        self.waits.append([time.monotonic() + timeout / 1000, req_id, seat, name, args, state])
        self.check_waits()

    def progress(self, seat, name, args, state):
        """Moves a waiting call on; its answer when it is done, else None."""
        t = self.table
        while True:
            if t.over():
                return self.finish(seat, name, state)
            p = t.pending(seat)
            if p is None:
                return None  # another agent must act first
            if name == "wait_for_action":
                return self.finish(seat, name, state)
            passing = p["action_type"] == "Priority"
            if name == "pass_priority" and passing and state["passed"] > 0 and p["choices"]:
                return self.finish(seat, name, state)
            if name == "auto_pass_until_event":
                grown = len(t.visible_log(seat)) - state["log_start"]
                if grown >= int(args.get("min_new_chars", 50)):
                    return self.finish(seat, name, state)
            if not passing:
                return self.finish(seat, name, state)
            t.apply(seat, pick(p["actions"], "PassPriority", lambda d: True))
            state["passed"] += 1
            t.advance()

    def finish(self, seat, name, state, timeout=False):
        out = {**self.action_info(seat), "timeout": timeout}
        if name != "wait_for_action":
            out["actions_passed"] = state["passed"]
            p = self.table.pending(seat)
            out["has_playable_cards"] = bool(p and p["action_type"] == "Priority" and p["choices"])
        if name == "auto_pass_until_event":
            news = self.table.visible_log(seat)[state["log_start"]:].lstrip("\n")
            out.update(event_occurred=bool(news) or self.table.over(), new_log=news, new_chars=len(news), actions_taken=state["passed"])
        return out

    def check_waits(self):
        """Answers every held call that can be answered now or timed out. One
        held call passing priority may hand the decision to another seat's
        held call, so it goes round again while any of them moved the game."""
        moved = True
        while moved:
            moved = False
            now = time.monotonic()
            for w in list(self.waits):
                deadline, req_id, seat, name, args, state = w
                passed = state["passed"]
                result = self.progress(seat, name, args, state)
                moved |= state["passed"] != passed
                if result is None and now >= deadline:
                    result = self.finish(seat, name, state, timeout=True)
                if result is not None:
                    self.waits.remove(w)
                    send_result(req_id, result, journal=self.news())
                    moved = True

    def next_deadline(self):
        return min((w[0] for w in self.waits), default=None)


# ---------------------------------------------------------------- protocol


# The game whose message is being handled, in a shared process: what is
# sent meanwhile goes to it.
TAG = None


def send(msg):
    text = json.dumps(msg, separators=(",", ":"))
    sys.stdout.write(text + "\n" if TAG is None else f"{TAG} {text}\n")
    sys.stdout.flush()


def send_result(req_id, value, error=False, journal=None):
    text = json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
    result = {"content": [{"type": "text", "text": text}], "isError": error}
    if not error:
        result["structuredContent"] = value
    if journal:
        result["_meta"] = {"journal": journal}
    send({"jsonrpc": "2.0", "id": req_id, "result": result})


def handle(bridge, msg):
    if msg is None:
        return send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
    method, req_id, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": req_id, "result": {
            "protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
            "serverInfo": {"name": "ludus-phase-bridge", "version": "0.1.0"}}})
    elif method == "tools/list":
        tools = [{"name": n, "description": d, "inputSchema": {"type": "object", "properties": p}} for n, d, p in TOOLS]
        send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": tools}})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        seat = int(((params.get("_meta") or {}).get("seat")) or 0)
        try:
            if name in ("wait_for_action", "pass_priority", "auto_pass_until_event"):
                if seat not in (0, 1):
                    raise ToolError("seat must be 0 or 1")
                bridge.start_wait(req_id, seat, name, args)
                return
            value = bridge.call(seat, name, args)
            if name == "new_game":
                # A rebuilt game's journal is the host's already.
                bridge.journaled = len(args.get("replay") or [])
            send_result(req_id, value, journal=bridge.news())
            bridge.check_waits()
        except ToolError as e:
            send_result(req_id, str(e), error=True)
        except Exception as e:  # an engine failure is this call's error, not the bridge's end
            log(f"{name} failed: {e!r}")
            send_result(req_id, f"the rules engine failed: {e}", error=True)
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": req_id, "result": {}})
    elif req_id is not None and method is not None:
        send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": f"method not found: {method}"}})


# ---------------------------------------------------------------- first use


def ensure_engine():
    """None when phase is importable (installed on first use: `first_use.py`
    beside this file), else why not and how to fix it."""
    import first_use

    return first_use.ensure(PHASE_REQUIREMENT, "phase", "phase-venv", "the rules engine", "about 35 MB", notice, __file__)


def launch_args(argv):
    """`--seats agent,ai --seed N --decks a,b --ai-level L`: start the game now."""
    import argparse

    if not argv:
        return None
    p = argparse.ArgumentParser(prog="phase_bridge.py")
    p.add_argument("--seats", default="agent,ai")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--decks", default="izzet-tempo,selesnya-beasts")
    p.add_argument("--ai-level", default="Medium")
    p.add_argument("--cards", default=None, help="an AtomicCards.json(.gz) file, or mtgjson")
    a = p.parse_args(argv)
    return {"seats": a.seats.split(","), "seed": a.seed, "decks": a.decks.split(","), "ai_level": a.ai_level, "cards": a.cards}


def serve_refusals(reason, shared):
    """Answers every request with why the engine is not available, so the
    agent reads the reason rather than a closed pipe."""
    global TAG
    log(reason)
    for line in sys.stdin:
        if shared:
            TAG, _, line = line.strip().partition(" ")
            if TAG.startswith("-"):
                continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("id") is not None and msg.get("method"):
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": reason}})


def main():
    problem = ensure_engine()
    shared = os.environ.get("LUDUS_ENGINE_SHARED") == "1"
    if problem:
        return serve_refusals(problem, shared)
    if shared:
        return serve_shared()
    bridge = Bridge()
    launch = launch_args(sys.argv[1:])
    if launch:
        # Configured at launch, as XMage's headless client is: one seat's
        # process, its game already set up, no new_game needed.
        bridge.table = Table(bridge.cards(launch["cards"]), bridge.decks, launch)
    log(f"ready: decks {', '.join(sorted(bridge.decks))}")
    serve({None: bridge}, lambda tag: bridge)


def serve_shared():
    """Many games, a `Bridge` each, by the host's tags."""
    bridges = {}
    log("ready: shared, one game per tag")

    def bridge_of(tag):
        if tag not in bridges:
            bridges[tag] = Bridge()
        return bridges[tag]

    serve(bridges, bridge_of, tagged=True)


def serve(bridges, bridge_of, tagged=False):
    """Reads messages until stdin ends, answering held calls as they come due."""
    global TAG
    buf = b""
    stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    while True:
        deadline = min((d for d in (b.next_deadline() for b in bridges.values()) if d is not None), default=None)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([stdin], [], [], timeout)
        if not ready:
            for tag, bridge in list(bridges.items()):
                guarded(bridges, tag, bridge.check_waits)
            continue
        chunk = os.read(stdin.fileno(), 65536)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            tag = None
            if tagged:
                head, _, line = line.strip().partition(b" ")
                tag = head.decode("ascii", "replace")
                if tag.startswith("-"):
                    bridges.pop(tag[1:], None)
                    continue
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            bridge = bridge_of(tag)
            guarded(bridges, tag, lambda: handle(bridge, msg))


def guarded(bridges, tag, work):
    """Runs `work` for game `tag`. In a shared process a failure it does not
    answer itself ends that game alone: the host closes its channel with why."""
    global TAG
    TAG = tag
    try:
        work()
    except Exception as e:  # noqa: BLE001 — one game's failure is that game's only
        if tag is None:
            raise
        log(f"game {tag} failed: {e!r}")
        bridges.pop(tag, None)
        TAG = None
        why = f"the rules engine failed in this game: {e!r}".replace("\n", " ")[:300]
        sys.stdout.write(f"-{tag} {why}\n")
        sys.stdout.flush()
    finally:
        TAG = None


if __name__ == "__main__":
    main()
