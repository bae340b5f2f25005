// The figures on screen in one PNG: each as its own save tool draws it (hidpi), two
// to a row, under a line naming the scenario, on the page theme's paper. (A CustomJS
// callback: names, the figures' names in page order; picked, the share box's views
// (its checkboxes, in the order of names), to keep only those ticked (the poster;
// none ticked: all), or null; title; file, the PNG's name; colors, the
// paper and ink of each theme. Names, not the figures: a figure the callback held
// would stay in the document, and be updated, while off screen.
// Bokeh.documents.at(-1) is the live page's: a built site keeps its prerendered one.)
const models = [...window.Bokeh.documents.at(-1).all_models];
const wanted = picked?.active.length ? picked.active.map((i) => names[i]) : names;
const views = wanted.flatMap((name) => models.filter((m) => m.name === name))
  .map((f) => window.Bokeh.index.find_one(f))
  .filter((v) => v != null && v.el.isConnected && v.el.offsetParent !== null);
const canvases = views.map((v) => v.export('png', true).canvas);
if (canvases.length === 0) return;
const ratio = window.devicePixelRatio || 1;
const gap = Math.round(16 * ratio), header = Math.round(36 * ratio);
const columns = Math.min(2, canvases.length);
const width = Math.max(...canvases.map((c) => c.width));
const height = Math.max(...canvases.map((c) => c.height));
const rows = Math.ceil(canvases.length / columns);
const out = document.createElement('canvas');
out.width = columns * width + (columns + 1) * gap;
out.height = header + rows * (height + gap) + gap;
const context = out.getContext('2d');
const [paper, ink] = colors[document.documentElement.dataset.labTheme] ?? colors.light;
context.fillStyle = paper;
context.fillRect(0, 0, out.width, out.height);
context.fillStyle = ink;
context.font = `${Math.round(15 * ratio)}px sans-serif`;
context.fillText(`${title}  ${decodeURIComponent(location.search)}`, gap, Math.round(24 * ratio));
canvases.forEach((canvas, i) => context.drawImage(canvas,
  gap + (i % columns) * (width + gap), header + Math.floor(i / columns) * (height + gap)));
out.toBlob((blob) => {
  const link = document.createElement('a');
  link.href = URL.createObjectURL(blob);
  link.download = file;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60000);
}, 'image/png');
