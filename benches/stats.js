'use strict';
// The one median of the benches: of the finite numbers given (runs that failed give null),
// the middle one, or the mean of the two middle ones; null when there are none.

function median(xs) {
  const s = xs.filter((x) => x != null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

module.exports = {median};
