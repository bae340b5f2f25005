// Brings an answer's view into sight: the hidden scroll marker's text is
// "<view> <count>". (A CustomJS callback: cb_obj is the marker.) The view may have
// come on screen with the same change (its section opened): then its element is
// built a few frames later, so look for it again on each frame, for about a second.
// BokehJS keeps a model that left the page for a while (30 s), so a card that left
// and came back has two models of its name: the one on screen is connected.
const key = cb_obj.text.split(' ')[0];
const name = key === 'stability' ? 'lab-stability' : `view:${key}`;
let frames = 60;
const scroll = () => {
  const view = [...cb_obj.document.all_models].filter((m) => m.name === name)
    .map((m) => window.Bokeh.index.find_one(m)).find((v) => v?.el.isConnected);
  if (view) view.el.scrollIntoView({block: 'start'});
  else if (key && frames-- > 0) requestAnimationFrame(scroll);
};
scroll();
