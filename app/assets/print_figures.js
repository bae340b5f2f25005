// Each figure whole on paper, at the printed page's width. (A CustomJS callback, run
// with the theme marker's first change in every document; installed once a window.)
// A canvas keeps the size it was drawn at on screen, and the printed page is laid out
// at another width: the figure was cut. Before printing, a still of each figure on
// screen (every layer, as its save tool draws it) takes its canvas's place, as wide as
// on screen or, where the page is narrower, scaled to its width; after printing the
// stills go. A figure's box is not broken across two sheets (where a frame around the
// page is taller than its sheet, the browser cuts the frame).
if (!window.labPrintFigures) {
  window.labPrintFigures = true;
  const css = `@media print {
  :host { display: block !important; width: 100% !important; height: auto !important;
          break-inside: avoid; }
  :host > .bk-Canvas { display: none !important; }
  .lab-print { display: block !important; max-width: 100%; height: auto; }
}
.lab-print { display: none; }`;
  const stills = [];
  // Panel shows a text pane in the animation frame after its stylesheets load, and a
  // page off the screen draws no frames: an embed printed before it was ever on the
  // screen printed no words. They are shown now, as that frame would show them.
  const showText = () => {
    for (const view of window.Bokeh.index.all_views()) {
      if (view.container?.style?.visibility === 'hidden') view.style_redraw?.();
    }
  };
  const print = () => {
    showText();
    if (stills.length > 0) return;  // already (the print event, then the media's change)
    const Plot = window.Bokeh.Models.get('Plot');
    for (const doc of window.Bokeh.documents) {
      for (const model of doc.all_models) {
        const view = model instanceof Plot ? window.Bokeh.index.find_one(model) : null;
        if (view == null || !view.el.isConnected || view.el.offsetParent === null) continue;
        // (an image, not the canvas drawn: WebKit prints a canvas made for the print black)
        const still = new Image();
        still.src = view.export('png', true).canvas.toDataURL('image/png');
        still.alt = '';  // the figure's own words say what it shows
        still.className = 'lab-print';
        still.style.width = `${view.el.offsetWidth}px`;  // its width on screen, at most the page's
        const style = document.createElement('style');
        style.textContent = css;
        view.shadow_el.append(style, still);
        stills.push(style, still);
      }
    }
    document.documentElement.dataset.labPrinted = stills.length / 2;  // figures, for tests
  };
  const screen = () => stills.splice(0).forEach((el) => el.remove());
  window.addEventListener('beforeprint', print);
  window.addEventListener('afterprint', screen);
  // And where print media comes without the print events (an emulated print).
  window.matchMedia('print').addEventListener('change', (e) => (e.matches ? print() : screen()));
}
