// Extracts the battle data the showdown plugin needs from the npm package
// `pokemon-showdown` (MIT) into gen9.json: moves, species, the type chart,
// item and ability names of generation 9. Run from a directory where the package is installed:
//   node plugins/showdown/data/extract.js <node_modules/pokemon-showdown> > plugins/showdown/data/gen9.json
'use strict';
const ps = require(require('path').resolve(process.argv[2] || 'node_modules/pokemon-showdown'));
const dex = ps.Dex.forGen(9);

const moves = {};
for (const m of dex.moves.all()) {
  if (m.isNonstandard && m.isNonstandard !== 'Unobtainable') continue;
  const cat = {Physical: 'P', Special: 'S', Status: '-'}[m.category];
  moves[m.id] = [m.name, m.type, cat, m.basePower, m.accuracy === true ? 0 : m.accuracy, m.priority];
}

const species = {};
for (const s of dex.species.all()) {
  if (s.isNonstandard && s.isNonstandard !== 'Unobtainable') continue;
  const b = s.baseStats;
  species[s.id] = [s.name, s.types, [b.hp, b.atk, b.def, b.spa, b.spd, b.spe], s.weightkg];
}

// Display names of items and abilities (the request gives ids, the log names).
const items = {};
for (const i of dex.items.all()) if (!i.isNonstandard || i.isNonstandard === 'Unobtainable') items[i.id] = i.name;
const abilities = {};
for (const a of dex.abilities.all()) if (!a.isNonstandard || a.isNonstandard === 'Unobtainable') abilities[a.id] = a.name;

// types[defending][attacking] = multiplier (only entries other than 1).
const types = {};
for (const t of dex.types.all()) {
  if (t.isNonstandard) continue;
  const row = {};
  for (const [attacking, code] of Object.entries(t.damageTaken)) {
    const mult = {0: 1, 1: 2, 2: 0.5, 3: 0}[code];
    if (dex.types.get(attacking).exists && mult !== 1) row[attacking] = mult;
  }
  types[t.name] = row;
}

// sets[species] = [level, [[move ids], [ability ids], [tera types]], …]: the
// random-battle generator's own pool, used to guess what the opponent has not
// revealed yet.
const randbats = require(require('path').resolve(process.argv[2] || 'node_modules/pokemon-showdown', 'data/random-battles/gen9/sets.json'));
const sets = {};
for (const [id, entry] of Object.entries(randbats)) {
  sets[id] = [entry.level, entry.sets.map(s => [s.movepool.map(m => dex.moves.get(m).id), s.abilities.map(a => dex.abilities.get(a).id), s.teraTypes || []])];
}

process.stdout.write(JSON.stringify({
  source: `pokemon-showdown ${require(require('path').resolve(process.argv[2] || 'node_modules/pokemon-showdown', 'package.json')).version} (MIT), generation 9`,
  moves, species, types, sets, items, abilities,
}));
