import { HELLO } from '@almanac/domain';
console.log(HELLO);
