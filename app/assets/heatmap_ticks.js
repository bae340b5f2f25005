// The heatmap's colour bar: the uniform weight 1/n is labelled as such.
// (A CustomJSTickFormatter: tick, n.)
if (Math.abs(tick * n - 1) < 1e-9) return '1/n';
return String(parseFloat(tick.toPrecision(2)));
