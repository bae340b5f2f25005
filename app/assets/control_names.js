// What Bokeh's and Panel's controls leave out for a screen reader, the keyboard and a
// quick hand. Slider handles get an accessible name (the slider's title) and their
// value as text (2 ** exponent for d_k and n), and a spinner's arrow buttons a name.
// No press on a slider's track is lost (keepEveryPress). A
// download button answers on its whole face and to Enter and Space: Panel's
// listens on the link around its label only, so a press on the button's padding,
// or from the keyboard (which clicks the focused button), downloaded nothing.
function valueText(model, value) {
  const format = model.format;
  if (format && typeof format === 'object' && typeof format.compute === 'function') {
    return String(format.compute(value));
  }
  return String(parseFloat(Number(value).toPrecision(6)));
}
function nameSlider(model, view) {
  const update = () => {
    for (const handle of view.slider_el.querySelectorAll('.noUi-handle')) {
      handle.setAttribute('aria-label', (model.title || '').trim());
      handle.setAttribute('aria-valuetext', valueText(model, model.value));
    }
  };
  view._noUiSlider.on('update.labnames', update);
  model.connect(model.change, update);
  update();
}
// noUiSlider ignores a press on a slider for 300 ms after a tap on its track, or after
// its value is set (from Python's answer): its "tap" state, in which the handle glides.
// A second tap soon after the first, or a tap just after an answer, was lost. The tap
// state now ends at the next press instead (a listener that runs before noUiSlider's):
// the handle still glides, and every press counts.
function keepEveryPress(view) {
  const target = view._noUiSlider.target;
  for (const type of ['pointerdown', 'mousedown', 'touchstart']) {
    target.addEventListener(type, () => target.classList.remove('noUi-state-tap'), {capture: true});
  }
}
function nameSpinner(model, view) {
  view.btn_up_el.setAttribute('aria-label', `increase ${model.title}`);
  view.btn_down_el.setAttribute('aria-label', `decrease ${model.title}`);
}
function wholeDownloadButton(model, view) {
  // On the shadow root, which outlives the button: the view draws a new one when the
  // button is enabled (the page enables its controls once it is live).
  view.shadow_el.addEventListener('click', (event) => {
    const button = event.target.closest?.('button');
    if (button !== null && button.contains(view.anchor_el) && !view.anchor_el.contains(event.target)) {
      view.anchor_el.click();
    }
  });
}
const NAMERS = {
  Slider: (model, view) => { nameSlider(model, view); keepEveryPress(view); },
  Spinner: nameSpinner,
  FileDownload: wholeDownloadButton,
};
function install(doc) {
  let missing = 0;
  for (const model of doc.all_models) {
    const namer = NAMERS[model.constructor.__name__];
    if (namer === undefined) continue;
    const view = window.Bokeh.index.find_one(model);
    if (view == null || (view._noUiSlider ?? view.btn_up_el ?? view.anchor_el) == null) {
      missing += 1;
    } else if (!view.__named) {
      view.__named = true;
      namer(model, view);
    }
  }
  return missing;
}
export function render({ model }) {
  const attempt = () => { if (install(model.document) > 0) requestAnimationFrame(attempt); };
  requestAnimationFrame(attempt);
}
