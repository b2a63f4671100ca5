// rlock: replaces redis-semaphore's test/shell.ts, which ran `docker compose up/stop redisN`
// and polled with `wait-for`: the same two functions, on the servers of ../servers.ts.
import { start, stop } from '../servers'

export async function upRedisServer(num: number) {
  await start(num)
}

export async function downRedisServer(num: number) {
  stop(num)
}
