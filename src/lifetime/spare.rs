//! Lists kept for the next lock instead of freed: the watchdog's and the loss notices'.

use std::collections::HashMap;
use std::rc::Rc;

/// Keeps an emptied list in `spare` for the next list made, if it is small and `spare` has
/// none: an uncontended pair with `WATCHDOG` or `NOTIFY` freed a lock's list and made another.
pub fn keep_spare<T>(spare: &mut Vec<T>, mut list: Vec<T>) {
    if spare.capacity() == 0 && list.capacity() <= SPARE_CAPACITY {
        list.clear();
        *spare = list;
    }
}

/// The largest list kept as a spare.
const SPARE_CAPACITY: usize = 4;

/// Takes the first item `matches` picks out of the list of `key`, in the one look-up that finds
/// the list (taken out of the map, put back only if items remain, else kept in `spare`): an
/// uncontended pair empties its lock's list, and looking the key up again to drop it hashed
/// the key twice.
pub fn take_one<T>(
    lists: &mut HashMap<Rc<[u8]>, Vec<T>>,
    key: &[u8],
    spare: &mut Vec<T>,
    matches: impl Fn(&T) -> bool,
) -> Option<T> {
    let (key, mut list) = lists.remove_entry(key)?;
    let taken = list.iter().position(matches).map(|at| list.swap_remove(at));
    match list.is_empty() {
        true => keep_spare(spare, list),
        false => {
            lists.insert(key, list);
        }
    }
    taken
}
