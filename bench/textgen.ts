// Deterministic English-like text for the SimHash tests and bench: a Zipf-ish
// mix of common English words and generated content words, from a seeded PRNG
// (mulberry32), so every run sees the same texts.

import { mulberry32 } from '../src/hash/mix.js';

export const prng = mulberry32;

const COMMON = (
  'the of and to a in is that for it as was with be by on not he i this are or his from at which but have an ' +
  'they you were her she there been one all we their has would when if so no will more can said who its about ' +
  'new into than them some could time these two may then do first any my now such like our over man me even most ' +
  'made after also did many before must through back years where much your way well down should because each just ' +
  'those people how too little state good very make world still own see men work long get here between both life being'
).split(' ');

const SYLL = ['ka', 'ter', 'mon', 'li', 'ra', 'sto', 'ven', 'pa', 'dre', 'qui', 'lo', 'mar', 'ti', 'gen', 'bal', 'cor', 'ne', 'fi', 'tus', 'ep'];

function contentWords(r: () => number, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let w = '';
    const k = 2 + Math.floor(r() * 3);
    for (let j = 0; j < k; j++) w += SYLL[Math.floor(r() * SYLL.length)];
    out.push(w);
  }
  return out;
}

const VOCAB = contentWords(prng(7), 20000);

/** An article of about `words` words. */
export function article(seed: number, words: number): string {
  const r = prng(seed);
  const out: string[] = [];
  let sentence = 0;
  for (let i = 0; i < words; i++) {
    const w = r() < 0.45 ? COMMON[Math.floor(Math.pow(r(), 2) * COMMON.length)] : VOCAB[Math.floor(Math.pow(r(), 1.5) * VOCAB.length)];
    out.push(sentence === 0 ? w[0].toUpperCase() + w.slice(1) : w);
    sentence++;
    if (sentence > 6 && r() < 0.12) { out[out.length - 1] += '.'; sentence = 0; }
  }
  return out.join(' ') + '.';
}
