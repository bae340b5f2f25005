// Tick labels with at most three significant digits: 0.0012, not 1.200e-3.
// (A CustomJSTickFormatter: tick.)
const a = Math.abs(tick);
if (a === 0) return '0';
if (a >= 1e-3 && a < 1e5) return String(parseFloat(tick.toPrecision(3)));
const [mantissa, exponent] = tick.toExponential(1).split('e');
return `${parseFloat(mantissa)}e${Number(exponent)}`;
