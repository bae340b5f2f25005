// Brings an answer's view into sight: the hidden scroll marker's text is
// "<view> <count>". (A CustomJS callback: cb_obj is the marker.)
const key = cb_obj.text.split(' ')[0];
const model = key && cb_obj.document.get_model_by_name(key === 'stability' ? 'lab-stability'
  : `view:${key}`);
const view = model && window.Bokeh.index.find_one(model);
if (view) view.el.scrollIntoView({block: 'start'});
