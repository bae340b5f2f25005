// Moves the keyboard's focus past the controls, to the first view on screen, so that a
// reader passes an embed's controls with one key. (A CustomJS callback on the button's
// click: cb_obj is the event, its origin the button.) BokehJS may keep a view that left
// the page: the one on screen is connected.
const views = [...cb_obj.origin.document.all_models]
  .filter((m) => typeof m.name === 'string' && m.name.startsWith('view:'))
  .map((m) => window.Bokeh.index.find_one(m)?.el).filter((el) => el?.isConnected);
const first = views.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)[0];
if (first) {
  first.tabIndex = -1;
  first.focus({preventScroll: true});
  first.scrollIntoView({block: 'start'});
}
