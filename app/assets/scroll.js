// Brings an answer's view into sight: the hidden scroll marker's text is
// "<view> <count>". (A CustomJS callback: cb_obj is the marker.) The view may have
// come on screen with the same change (its section opened): then its element is
// built a few frames later, so look for it again on each frame, for about a second.
const key = cb_obj.text.split(' ')[0];
const name = key === 'stability' ? 'lab-stability' : `view:${key}`;
let frames = 60;
const scroll = () => {
  const model = key && cb_obj.document.get_model_by_name(name);
  const view = model && window.Bokeh.index.find_one(model);
  if (view && view.el.isConnected) view.el.scrollIntoView({block: 'start'});
  else if (key && frames-- > 0) requestAnimationFrame(scroll);
};
scroll();
