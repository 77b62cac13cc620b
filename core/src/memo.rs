//! Values derived from a tensor's elements, remembered while the elements live.
//!
//! A tensor's elements never change once made and a clone shares them ([`Tensor`]), so what is
//! computed from them (a weight's largest magnitude, its fp16 conversion) is the same for every
//! copy of a graph that holds them. `f16c check --fix` compiles one model a few dozen times, each
//! probe from a copy of the f32 graph: every probe converted, scanned and summed every weight
//! again. Here each result is kept under the elements' identity (their allocation) and what was
//! computed (`what`, chosen by the caller).
//!
//! Nothing is kept alive by being remembered: an entry holds the elements it was computed from
//! weakly (so their allocation, and with it the identity, cannot be reused while the entry
//! exists), and a remembered tensor weakly too: it is found again while something else (the
//! all-low model `check --fix` keeps) still holds it. A compile that runs once remembers what it
//! computes and frees it as before.

use crate::tensor::{Data, Tensor};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};

enum Value {
    Number(f64),
    Elements(Weak<Data>),
}

struct Entry {
    of: Weak<Data>,
    value: Value,
}

impl Entry {
    fn live(&self) -> bool {
        self.of.strong_count() > 0 && !matches!(&self.value, Value::Elements(v) if v.strong_count() == 0)
    }
}

/// Entries are dropped once this many are held, those whose elements are gone.
const PRUNE_AT: usize = 4096;

static MEMO: LazyLock<Mutex<HashMap<(usize, u64), Entry>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn key(of: &Arc<Data>, what: u64) -> (usize, u64) {
    (Arc::as_ptr(of) as usize, what)
}

fn remember(of: &Arc<Data>, what: u64, value: Value) {
    let Ok(mut memo) = MEMO.lock() else { return };
    if memo.len() >= PRUNE_AT {
        memo.retain(|_, e| e.live());
    }
    memo.insert(key(of, what), Entry { of: Arc::downgrade(of), value });
}

/// `compute()`, a number derived from `t`'s elements, remembered under `what` (the caller's
/// name for it, with whatever else it depends on hashed in).
pub fn number(t: &Tensor, what: u64, compute: impl FnOnce() -> f64) -> f64 {
    number_of(t.shared_data(), what, compute)
}

/// [`number`] of elements.
pub fn number_of(of: &Arc<Data>, what: u64, compute: impl FnOnce() -> f64) -> f64 {
    if let Ok(memo) = MEMO.lock() {
        if let Some(Entry { value: Value::Number(x), .. }) = memo.get(&key(of, what)) {
            return *x;
        }
    }
    let x = compute();
    remember(of, what, Value::Number(x));
    x
}

/// `compute()`, a tensor of `t`'s shape derived from its elements, remembered under `what` while
/// anything holds it.
pub fn tensor(t: &Tensor, what: u64, compute: impl FnOnce() -> Tensor) -> Tensor {
    let of = t.shared_data();
    if let Ok(memo) = MEMO.lock() {
        if let Some(Entry { value: Value::Elements(weak), .. }) = memo.get(&key(of, what)) {
            if let Some(data) = weak.upgrade() {
                return Tensor::from_shared(t.shape().to_vec(), data).expect("remembered with this shape");
            }
        }
    }
    let made = compute();
    remember(of, what, Value::Elements(Arc::downgrade(made.shared_data())));
    made
}

/// A `what` for [`number`] and [`tensor`]: `name` and `parts` hashed.
pub fn what(name: &str, parts: &[u64]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    parts.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_remembered_for_every_clone_and_only_for_the_same_elements() {
        let t = Tensor::from_f32(vec![3], vec![1.0, -2.0, 3.0]).unwrap();
        let copy = t.clone();
        let w = what("test: peak", &[]);
        assert_eq!(number(&t, w, || 3.0), 3.0);
        assert_eq!(number(&copy, w, || panic!("remembered for a clone")), 3.0);
        // Equal elements elsewhere are other elements.
        let other = Tensor::from_f32(vec![3], vec![1.0, -2.0, 3.0]).unwrap();
        assert_eq!(number(&other, w, || 4.0), 4.0);
        assert_eq!(number(&t, what("test: other", &[]), || 5.0), 5.0);
    }

    #[test]
    fn a_tensor_is_found_again_only_while_something_holds_it() {
        let t = Tensor::from_f32(vec![2], vec![1.5, 2.5]).unwrap();
        let w = what("test: doubled", &[]);
        let made = tensor(&t, w, || Tensor::from_f32(vec![2], vec![3.0, 5.0]).unwrap());
        let again = tensor(&t.clone(), w, || panic!("held by `made`"));
        assert!(Arc::ptr_eq(made.shared_data(), again.shared_data()));
        drop((made, again));
        let fresh = tensor(&t, w, || Tensor::from_f32(vec![2], vec![3.0, 5.0]).unwrap());
        assert_eq!(fresh.to_f32_vec(), vec![3.0, 5.0]);
    }
}
