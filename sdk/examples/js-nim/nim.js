// Nim against the computer: the JavaScript example game of the Ludus SDK.
//
// componentize-js turns this ES module into a WebAssembly component for the
// world in wit/nim.wit (see build.sh). Each exported WIT interface is an
// exported object of the same name (camelCase): `meta` describes the plugin,
// `tools` has one method per tool. A WIT `result` error is a thrown string.
//
// One component instance is one game session, so module-level state is the
// game: the host gives every `start` a fresh instance and routes each `take`
// and `get-state` to the instance whose `game-id` the agent passed.

import { seed as sessionSeed, sessionId } from 'ludus:plugin/host@0.1.7';

let piles = [];
let winner; // undefined while the game goes on, else 'you' or 'computer'
let lastComputerMove; // [pile, count] the computer took last, for the text
let random; // seeded per session: the instance was snapshotted at build time

const hint = (name, role = 'uses', readOnly = false) => ({
  name,
  role,
  sessionParam: role === 'uses' ? 'game-id' : undefined,
  readOnly,
  destructive: false,
  idempotent: readOnly,
  openWorld: false,
});

export const meta = {
  describe() {
    return {
      name: 'nim',
      title: 'Nim',
      version: '0.1.0',
      description: 'Nim against the computer (a Ludus game written in JavaScript).',
      tools: [hint('start', 'creates'), hint('take'), hint('get-state', 'uses', true)],
      resources: [],
    };
  },
  readResource(uri) {
    throw `nim has no resource ${uri}`;
  },
};

export const tools = {
  start(chosen, seed) {
    random = splitmix(sessionSeed());
    if (chosen === undefined) {
      const count = 3 + Math.floor(random() * 3);
      piles = Array.from({ length: count }, () => 1 + Math.floor(random() * 9));
    } else {
      piles = Array.from(chosen);
      if (piles.length < 2 || piles.length > 6 || piles.some((n) => n < 1 || n > 20)) {
        throw `piles must be 2 to 6 numbers from 1 to 20, got [${piles.join(', ')}]`;
      }
    }
    return game();
  },

  take(gameId, pile, count) {
    if (winner !== undefined) {
      throw `the game is over (${winner === 'you' ? 'you' : 'the computer'} won); call \`nim_start\` for a new one`;
    }
    if (pile > piles.length) {
      throw `there are only ${piles.length} piles; choose one from 1 to ${piles.length}`;
    }
    if (count > piles[pile - 1]) {
      throw `pile ${pile} has ${piles[pile - 1]} left; take from 1 to ${piles[pile - 1]}`;
    }
    piles[pile - 1] -= count;
    if (isEmpty()) {
      winner = 'you';
    } else {
      lastComputerMove = computerMove();
      piles[lastComputerMove[0] - 1] -= lastComputerMove[1];
      if (isEmpty()) winner = 'computer';
    }
    return game();
  },

  getState(gameId) {
    return game();
  },
};

const isEmpty = () => piles.every((n) => n === 0);

// The winning move leaves a nim-sum (xor of the piles) of zero. Without one,
// take a single object from a random pile and hope the agent errs.
function computerMove() {
  const sum = piles.reduce((a, b) => a ^ b, 0);
  if (sum !== 0) {
    const pile = piles.findIndex((n) => (n ^ sum) < n);
    return [pile + 1, piles[pile] - (piles[pile] ^ sum)];
  }
  const nonEmpty = piles.flatMap((n, i) => (n > 0 ? [i + 1] : []));
  return [nonEmpty[Math.floor(random() * nonEmpty.length)], 1];
}

function game() {
  const id = sessionId() ?? '';
  const heaps = piles.map((n, i) => `pile ${i + 1}: ${'|'.repeat(n) || '-'} (${n})`).join('\n');
  let next;
  if (winner === 'you') next = 'You took the last object: you won. Call `nim_start` to play again.';
  else if (winner === 'computer') next = `The computer took ${lastComputerMove[1]} from pile ${lastComputerMove[0]}, the last object: it won. Call \`nim_start\` to play again.`;
  else {
    const took = lastComputerMove ? `The computer took ${lastComputerMove[1]} from pile ${lastComputerMove[0]}. ` : '';
    next = `${took}Your move: call \`nim_take\` with game_id "${id}", a pile and a count.`;
  }
  return { gameId: id, piles: Uint32Array.from(piles), winner, text: `${heaps}\n\n${next}` };
}

// SplitMix64 over the session's 64-bit seed: a small generator that repeats
// with the seed.
function splitmix(seed) {
  let state = BigInt.asUintN(64, seed);
  return () => {
    state = BigInt.asUintN(64, state + 0x9e3779b97f4a7c15n);
    let z = state;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    return Number(z >> 11n) / 2 ** 53;
  };
}
